"""``serve_config.yaml`` (the ``serve deploy`` config) is valid for Ray Serve and matches the application it names."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[2] / "serve_config.yaml"


@pytest.fixture(scope="module")
def schema():
    pytest.importorskip("ray.serve", reason="ray[serve] is not installed")
    import yaml
    from ray.serve.schema import ServeDeploySchema

    return ServeDeploySchema.model_validate(yaml.safe_load(CONFIG.read_text(encoding="utf-8")))


def test_the_config_builds_the_application_it_configures(schema):
    from ray.serve._private.build_app import build_app as serve_build

    from workers.cli.serve import build_app
    from workers.serve import APP_NAME

    assert schema.proxy_location == "HeadOnly" and schema.http_options.host == "127.0.0.1"
    (app,) = schema.applications
    assert app.name == APP_NAME and app.import_path == "workers.cli.serve:build_app"
    built = serve_build(build_app(app.args), name=app.name)
    names = {d.name for d in built.deployments}
    assert names == {"scorer-spacy", "scorer-llm", "RubricService"}
    # every deployment the config sets options for exists in the application (serve deploy refuses others)
    assert {d.name for d in app.deployments} <= names


@pytest.mark.parametrize("args,msg", [({"argv": ["--port", "9000"]}, "--port is set by the config file itself"),
                                      ({"rubrics": "coherence"}, "unknown application args \\['rubrics'\\]")])
def test_ray_options_belong_to_the_config_not_argv(schema, args, msg):
    from rubric.errors import ConfigError
    from workers.cli.serve import build_app

    with pytest.raises(ConfigError, match=msg):
        build_app(args)
