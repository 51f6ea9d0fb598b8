"""The job kinds on the one runner (``workers.runner``) and the single-purpose jobs behind commands.

``score`` (answers -> rubric tables), ``judge`` (pairs -> judgments, both orders; a protocol's judge
kinds build on it), ``validate`` (the score kind over minimal pairs) and ``agreement`` (``validate --human``);
``encoder``, ``perturb``, ``lfq`` and ``export`` (one file or folder each, through the output folder).

This is the room's public face: other rooms (the CLI, the protocols, the scripts) import from here, not from its
modules. ``run_score_job`` is the score module's ``run_job``.
"""

from workers.jobs.agreement import RATED_FORMATS, run_agreement_job
from workers.jobs.encoder import run_encoder_job
from workers.jobs.export import run_transfer, write_table
from workers.jobs.judge import JudgeKind, JudgeSettings, ProtocolPage, protocol_settings, run_judge_job
from workers.jobs.lfq import run_lfq_job
from workers.jobs.perturb import load_victim, run_perturb_job
from workers.jobs.score import ScoreKind, run_job as run_score_job
from workers.jobs.validate import N_BOOT, run_validate_job

__all__ = ["RATED_FORMATS", "run_agreement_job", "run_encoder_job", "run_transfer", "write_table", "JudgeKind",
           "JudgeSettings", "ProtocolPage", "protocol_settings", "run_judge_job", "run_lfq_job", "load_victim",
           "run_perturb_job", "ScoreKind", "run_score_job", "N_BOOT", "run_validate_job"]
