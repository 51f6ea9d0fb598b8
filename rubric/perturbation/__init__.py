"""Perturbations of answers, for the robustness analysis (the paper's Table 8): ``attacks`` (DeepWordBug's
character edits and TextFooler's synonym swaps, guided by a victim's P(label)), ``victim`` (the rubric
preference model as victim), ``rewrite`` (the perturbed copy of an input, in its own format), ``split_attack`` (one attack over a
split's pairs, answers shared by several pairs changed once, and TextAttack's accounting of it). The
encoder victim and the synonym sources are ``models``'; the job is ``workers.jobs.perturb``.

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.perturbation.attacks import (
    ATTACKS, STOPWORDS, Word, words, word_budget, match_case, char_edits, same_stem, SynonymSource,
    synonym_candidates, replace_words, remove_word, Victim, decide, p_label, word_importance, WordChange,
    AttackResult, attack_pair,
)
from rubric.perturbation.split_attack import (
    SplitAttack, victim_p_a, attack_split, attack_accounting,
)
from rubric.perturbation.victim import (
    RubricVictim, rubric_victim_specs,
)
from rubric.perturbation.rewrite import (
    rewrite_input, answer_fields,
)

__all__ = [
    "ATTACKS", "STOPWORDS", "Word", "words", "word_budget", "match_case", "char_edits", "same_stem", "SynonymSource",
    "synonym_candidates", "replace_words", "remove_word", "Victim", "decide", "p_label", "word_importance",
    "WordChange", "AttackResult", "attack_pair", "RubricVictim", "rubric_victim_specs", "rewrite_input",
    "answer_fields", "SplitAttack", "victim_p_a", "attack_split", "attack_accounting",
]
