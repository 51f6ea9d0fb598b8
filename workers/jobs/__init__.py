"""The job kinds on the one runner (``workers.runner``) and the single-purpose jobs behind commands.

``score`` (answers -> rubric tables), ``judge`` (pairs -> judgments, both orders; a protocol's judge
kinds build on it), ``linkage`` (LINKAGE's graded lists); ``encoder``, ``perturb``, ``lfq`` and
``export`` (one file or folder each, through the output folder).
"""
