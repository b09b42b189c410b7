"""Config: strict YAML loading with errors that name the key path; shipped configs load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flows.config import CONFIG_DIR, BuildConfig, ConfigError, dump_config, load_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["demo.yaml", "reactbench.yaml"])
def test_shipped_configs_load(name: str) -> None:
    cfg = load_config(ROOT / "configs" / name)
    assert isinstance(cfg, BuildConfig)


def test_paper_settings() -> None:
    cfg = load_config(ROOT / "configs" / "reactbench.yaml")
    assert cfg.mine.relational_erasure.n_min == 50 and cfg.mine.relational_erasure.theta == 0.2
    assert cfg.mine.counterfactual_attribute.n_min == 50 and cfg.mine.counterfactual_attribute.theta == 0.2
    assert cfg.mllm.backend == "openai" and cfg.mllm.base_url
    assert any("Qwen-Image-Edit-2511" in str(e.params) for e in cfg.editors)


def test_default_config_is_the_embedded_demo() -> None:
    assert CONFIG_DIR.joinpath("demo.yaml").exists()
    assert load_config(None) == load_config(ROOT / "configs" / "demo.yaml")


def _write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    p = _write(tmp_path, {"mine": {"relational_erasure": {"n_mni": 3}}})
    with pytest.raises(ConfigError) as err:
        load_config(p)
    assert "mine.relational_erasure.n_mni" in str(err.value) and str(p) in str(err.value)


def test_wrong_type_names_path_and_value(tmp_path: Path) -> None:
    p = _write(tmp_path, {"run": {"seed": "abc"}, "mllm": {"concurrency": 0}})
    with pytest.raises(ConfigError) as err:
        load_config(p)
    msg = str(err.value)
    assert "run.seed" in msg and "'abc'" in msg and "mllm.concurrency" in msg


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("run: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_overrides_and_dump_round_trip(tmp_path: Path) -> None:
    cfg = load_config(
        ROOT / "configs" / "demo.yaml",
        {"mllm.backend": "openai", "mllm.base_url": "http://127.0.0.1:9/v1", "mllm.model": "m"},
    )
    assert cfg.mllm.backend == "openai"
    again = load_config(_write(tmp_path, yaml.safe_load(dump_config(cfg))))
    assert again == cfg
    assert "sk-" not in dump_config(cfg) and "api_key_env" in dump_config(cfg)


def test_real_backend_needs_a_model_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mllm.model must name the openai model"):
        load_config(ROOT / "configs" / "demo.yaml", {"mllm.backend": "openai"})


def test_one_resolver_explicit_then_saved_then_demo(tmp_path: Path) -> None:
    """Every command and flow resolves its config with ``resolve_run_config``: an explicit config
    wins, else the run directory's saved config.yaml, else the embedded demo config."""
    from flows.config import DEFAULT_CONFIG, resolve_run_config

    run_dir = tmp_path / "run"
    assert resolve_run_config(None, run_dir=run_dir) == load_config(DEFAULT_CONFIG)
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(dump_config(load_config(None, {"run.seed": 7})))
    assert resolve_run_config(None, {"mllm.model": None}, run_dir=run_dir).run.seed == 7, "unset overrides are ignored"
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("run:\n  seed: 3\n")
    assert resolve_run_config(explicit, {"run.workers": 1}, run_dir=run_dir).run.seed == 3
    assert resolve_run_config({"run": {"seed": 5}}, {"run.workers": 1}).run.workers == 1
    with pytest.raises(ConfigError, match=r"editors\[1\].name: unknown editor 'sam_lama'; valid choices: .*sam-lama"):
        resolve_run_config({"editors": [{"name": "classical"}, {"name": "sam_lama"}]})


def test_saved_config_of_an_fsspec_run_is_read(tmp_path: Path) -> None:
    """A run on ``s3://`` (here ``memory://``) keeps its config.yaml there: a command without
    --config must read it, not fall back to the demo config; a broken one is named by its URL."""
    from flows.config import resolve_run_config
    from storage.fs import RunFS

    url = "memory://rb-config-test/run"
    run = RunFS.open(url)
    run.write_bytes_atomic("config.yaml", dump_config(load_config(None, {"run.seed": 11})).encode())
    assert resolve_run_config(None, {"run.workers": 1}, run_dir=url).run.seed == 11
    run.write_bytes_atomic("config.yaml", b"run:\n  seed: [unclosed\n")
    with pytest.raises(ConfigError, match=r"memory://+rb-config-test/run/config.yaml: not valid YAML"):
        resolve_run_config(None, run_dir=url)
    run.rm("config.yaml")
