"""The attacks' models: ``synonyms`` (offline synonym sources for the synonym attack: WordNet, or the
encoder's embedding neighbours). The attacks themselves are ``rubric.perturbation``.

This is the room's public face: other rooms import from here, not from its modules.
"""

from models.attacks.synonyms import WordNetSynonyms, build_synonyms, wordnet_dir

__all__ = ["WordNetSynonyms", "build_synonyms", "wordnet_dir"]
