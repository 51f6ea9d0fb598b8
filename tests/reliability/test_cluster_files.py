"""The files users launch a GPU cluster with, checked here, where no cluster or Docker engine exists.

``ray_cluster.yaml`` is validated against the cluster-config JSON schema that the installed Ray
ships (``ray/autoscaler/ray-schema.json``) and then through Ray's own ``prepare_config`` /
``validate_config``, the checks ``ray up`` runs before it touches a cloud. ``jsonschema`` and
``pyyaml`` are dependencies of Ray itself, so wherever the schema exists they do too.

``Dockerfile.gpu`` is parsed (instructions, ``pip install`` arguments, ``python -c`` imports) and
compared with ``pyproject.toml``: the extras it installs exist and include what the GPU job on Ray
needs, nothing is pinned beside the extras where it could drift from them, every package of the
project is copied into the image, and the image's Python satisfies ``requires-python``.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]
CLUSTER_YAML = REPO / "ray_cluster.yaml"
DOCKERFILE = REPO / "Dockerfile.gpu"

#: The extras a GPU worker of the Ray job needs: CUDA engines and LanguageTool (gpu), Ray itself (ray).
GPU_JOB_EXTRAS = frozenset({"gpu", "ray"})
#: Installer tooling the image may upgrade before installing the project; not project dependencies.
INSTALLER_TOOLS = frozenset({"pip", "setuptools", "wheel"})


# ---------------------------------------------------------------------------------------------
# ray_cluster.yaml


@pytest.fixture(scope="module")
def ray_schema() -> dict:
    ray = pytest.importorskip("ray")
    path = Path(ray.__file__).parent / "autoscaler" / "ray-schema.json"
    assert path.is_file(), f"the installed Ray ({ray.__version__}) ships no cluster schema at {path}"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def cluster_config() -> dict:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    assert isinstance(config, dict), "ray_cluster.yaml is not a mapping"
    return config


def _schema_errors(config: dict, schema: dict) -> list[str]:
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
                  for e in validator.iter_errors(config))


def test_cluster_yaml_matches_installed_ray_schema(cluster_config, ray_schema):
    assert _schema_errors(cluster_config, ray_schema) == []


def test_schema_check_catches_a_broken_cluster_yaml(cluster_config, ray_schema):
    # The check above must be able to fail: a misspelt top-level key, a node type without its
    # node_config and a string where a number belongs are all refused by the schema.
    broken = json.loads(json.dumps(cluster_config))
    broken["max_worker"] = broken.pop("max_workers")
    worker = next(n for n in broken["available_node_types"] if n != broken["head_node_type"])
    del broken["available_node_types"][worker]["node_config"]
    broken["idle_timeout_minutes"] = "ten"
    errors = "\n".join(_schema_errors(broken, ray_schema))
    assert "max_worker" in errors
    assert "node_config" in errors
    assert "idle_timeout_minutes" in errors


def test_cluster_yaml_passes_rays_own_checks(cluster_config):
    # What `ray up` does before any cloud call: fill in the provider's defaults, validate the
    # merged config, check head_node_type and the min_workers sum against max_workers.
    pytest.importorskip("ray")
    from ray.autoscaler._private.util import prepare_config, validate_config

    prepared = prepare_config(json.loads(json.dumps(cluster_config)))
    validate_config(prepared)
    assert prepared["head_node_type"] in prepared["available_node_types"]


def test_cluster_yaml_has_gpu_workers_running_the_gpu_image(cluster_config):
    node_types = cluster_config["available_node_types"]
    workers = {name: t for name, t in node_types.items() if name != cluster_config["head_node_type"]}
    assert workers, "ray_cluster.yaml declares no worker node type"
    assert any(t.get("max_workers", 0) > 0 for t in workers.values()), "no worker type may start a node"
    image = cluster_config.get("docker", {}).get("image", "")
    assert image.endswith(":gpu"), f"the workers should run the Dockerfile.gpu image, got {image!r}"


def test_image_ray_is_the_ray_whose_schema_we_check():
    # The image installs the [ray] extra; the cluster is launched with the Ray installed here. A
    # different version there would make the schema check above about another Ray.
    ray = pytest.importorskip("ray")
    pins = [r for r in _extras()["ray"] if canonicalize_name(r.name) == "ray"]
    assert len(pins) == 1, "the [ray] extra should name ray once"
    assert pins[0].specifier.contains(ray.__version__), (
        f"the [ray] extra pins {pins[0].specifier}, the installed Ray is {ray.__version__}")


# ---------------------------------------------------------------------------------------------
# Dockerfile.gpu and pyproject.toml


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _extras() -> dict[str, list[Requirement]]:
    extras = _pyproject()["project"]["optional-dependencies"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in extras.items()}


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction, continuation lines joined, comment lines dropped.

    As Docker does: a line whose first non-blank character is ``#`` is a comment even inside a
    continued ``RUN``; a trailing backslash continues the instruction on the next line.
    """
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("#") or (not line.strip() and not buf):
            continue
        if line.rstrip().endswith("\\"):
            buf.append(line.rstrip()[:-1])
            continue
        buf.append(line)
        joined = " ".join(part.strip() for part in buf).strip()
        buf = []
        if joined:
            word, _, args = joined.partition(" ")
            out.append((word.upper(), args.strip()))
    if buf:
        raise ValueError("Dockerfile ends inside a continued instruction")
    return out


@dataclass(frozen=True)
class PipInstall:
    """One ``pip install`` of a RUN: the project's extras (``.[a,b]``) and any other requirements."""

    project_extras: frozenset[str] | None  # None: the project itself is not installed here
    others: tuple[Requirement, ...]


def _shell_commands(run_args: str) -> list[list[str]]:
    words = shlex.split(run_args, posix=True)
    commands: list[list[str]] = [[]]
    for w in words:
        if w in ("&&", "||", ";", "|"):
            commands.append([])
        else:
            commands[-1].append(w)
    return [c for c in commands if c]


def pip_installs(instructions: list[tuple[str, str]]) -> list[PipInstall]:
    """Every ``pip install`` in the RUN instructions (``pip``, ``pip3``, ``python -m pip``)."""
    found: list[PipInstall] = []
    for word, args in instructions:
        if word != "RUN":
            continue
        for cmd in _shell_commands(args):
            if "install" not in cmd:
                continue
            head = cmd[:cmd.index("install")]
            if not (head and (Path(head[0]).name.startswith("pip") or head[-2:] == ["-m", "pip"])):
                continue
            extras: frozenset[str] | None = None
            others: list[Requirement] = []
            skip_next = False
            for arg in cmd[cmd.index("install") + 1:]:
                if skip_next:
                    skip_next = False
                    continue
                if arg in ("-r", "-c", "--index-url", "--extra-index-url", "-i", "--target", "-t"):
                    skip_next = True  # an option with a value: not a requirement
                    continue
                if arg.startswith("-"):
                    continue  # flags; "-e" marks the next argument editable, which is still parsed
                m = re.fullmatch(r"\.(?:\[([^\]]*)\])?", arg)
                if m:
                    extras = frozenset(e.strip() for e in (m.group(1) or "").split(",") if e.strip())
                else:
                    others.append(Requirement(arg))
            found.append(PipInstall(extras, tuple(others)))
    return found


def _python_c_imports(instructions: list[tuple[str, str]]) -> set[str]:
    """Top-level modules imported by the ``python -c`` snippets of the RUN instructions."""
    modules: set[str] = set()
    for word, args in instructions:
        if word != "RUN":
            continue
        for cmd in _shell_commands(args):
            for i, w in enumerate(cmd[:-1]):
                if Path(w).name.startswith("python") and cmd[i + 1] == "-c" and i + 2 < len(cmd):
                    for node in ast.walk(ast.parse(cmd[i + 2])):
                        if isinstance(node, ast.Import):
                            modules.update(a.name.split(".")[0] for a in node.names)
                        elif isinstance(node, ast.ImportFrom) and node.module:
                            modules.add(node.module.split(".")[0])
    return modules


@pytest.fixture(scope="module")
def docker() -> list[tuple[str, str]]:
    return dockerfile_instructions(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def project_install(docker) -> PipInstall:
    mine = [p for p in pip_installs(docker) if p.project_extras is not None]
    assert len(mine) == 1, f"Dockerfile.gpu should pip-install the project once, found {len(mine)}"
    return mine[0]


def test_dockerfile_parser_reads_what_docker_reads():
    text = ("FROM base\n# a comment\nRUN a \\\n    # a comment inside the RUN\n    && python -m pip install -e "
            "\".[gpu,ray]\" 'x==1' \\\n    && python -c \"import foo.bar; from baz import q\"\nCMD [\"bash\"]\n")
    ins = dockerfile_instructions(text)
    assert [w for w, _ in ins] == ["FROM", "RUN", "CMD"]
    (install,) = pip_installs(ins)
    assert install.project_extras == {"gpu", "ray"}
    assert [str(r) for r in install.others] == ["x==1"]
    assert _python_c_imports(ins) == {"foo", "baz"}


def test_dockerfile_installs_the_gpu_job_extras(project_install):
    declared = set(_extras())
    unknown = project_install.project_extras - declared
    assert not unknown, f"Dockerfile.gpu installs extras pyproject.toml does not declare: {sorted(unknown)}"
    missing = GPU_JOB_EXTRAS - project_install.project_extras
    assert not missing, f"Dockerfile.gpu does not install the {sorted(missing)} extra(s) the GPU job needs"


def test_dockerfile_pins_nothing_beside_the_extras(docker, project_install):
    # A package installed next to the extras is a second place to keep a version in: it belongs in
    # the extra (so `pip install lfqa-rubric[gpu]` outside the image gets it too).
    extras = _extras()
    installed = {canonicalize_name(r.name): r for e in project_install.project_extras for r in extras[e]}
    outside = [str(r) for p in pip_installs(docker) for r in p.others
               if canonicalize_name(r.name) not in INSTALLER_TOOLS
               and (canonicalize_name(r.name) not in installed or installed[canonicalize_name(r.name)] != r)]
    assert outside == [], f"Dockerfile.gpu installs packages that are not (or not so) in its extras: {outside}"


def test_gpu_extra_holds_what_the_gpu_job_loads():
    from rubric.config import ScoringConfig

    gpu = {canonicalize_name(r.name) for r in _extras()["gpu"]}
    # The default spaCy pipeline of conciseness and factuality's sentence splitter is a pip package.
    spacy_pkg = canonicalize_name(ScoringConfig().spacy_model)
    needed = {"vllm", "torch", "transformers", "spacy", spacy_pkg, "language-tool-python", "rank-bm25"}
    assert needed - gpu == set(), f"the [gpu] extra lacks {sorted(needed - gpu)}"


def test_dockerfile_python_snippets_import_declared_packages(docker, project_install):
    extras = _extras()
    declared = {canonicalize_name(r.name) for e in project_install.project_extras for r in extras[e]}
    declared |= {canonicalize_name(Requirement(r).name) for r in _pyproject()["project"]["dependencies"]}
    imports = {canonicalize_name(m) for m in _python_c_imports(docker)}
    assert imports, "expected the Dockerfile to bake LanguageTool in with a python -c snippet"
    assert imports - declared == set(), f"Dockerfile.gpu imports undeclared packages: {sorted(imports - declared)}"


def test_dockerfile_copies_every_package_and_its_python_fits(docker):
    project = _pyproject()
    copied: set[str] = set()
    for word, args in docker:
        if word == "COPY" and not args.startswith("--from"):
            *sources, _dest = shlex.split(args)
            copied.update(s.rstrip("/") for s in sources)
    for src in copied:
        assert (REPO / src).exists(), f"Dockerfile.gpu copies {src}, which does not exist"
    packages = {p.split(".")[0] for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages - copied == set(), f"Dockerfile.gpu does not copy the packages {sorted(packages - copied)}"
    assert {"pyproject.toml", project["project"]["readme"]} <= copied

    run_text = " ".join(args for word, args in docker if word == "RUN")
    versions = set(re.findall(r"\bpython(3\.\d+)\b", run_text))
    assert len(versions) == 1, f"expected one python3.X in Dockerfile.gpu, found {sorted(versions)}"
    (version,) = versions
    requires = SpecifierSet(project["project"]["requires-python"])
    assert requires.contains(version), f"the image's Python {version} does not satisfy requires-python {requires}"


def test_dockerfile_pip_and_ray_are_the_image_pythons(docker):
    """Ubuntu's python3-pip serves the distro's own python3 (3.10 on 22.04), not a python3.X installed
    beside it: the image makes a venv of its python3.X and puts its bin/ first on PATH, so that
    ``python -m pip`` installs into the Python that runs the job and ``ray start`` is that Python's."""
    run_text = " ".join(args for word, args in docker if word == "RUN")
    (version,) = set(re.findall(r"\bpython(3\.\d+)\b", run_text))
    assert "python3-pip" not in run_text.split(), "python3-pip is the distro Python's pip, not python" + version
    venv = re.search(rf"\bpython{re.escape(version)} -m venv (\S+)", run_text)
    assert venv, f"Dockerfile.gpu should create a venv with python{version}"
    env = " ".join(args for word, args in docker if word == "ENV")
    assert re.search(rf"\bPATH={re.escape(venv.group(1))}/bin:", env), f"{venv.group(1)}/bin is not first on PATH"
