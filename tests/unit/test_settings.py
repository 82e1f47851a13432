import pytest

from heirloom.settings import SettingsError, settings_from_env


def test_defaults_are_local():
    s = settings_from_env({})
    assert s.embedding.provider == "local" and s.embedding.dimension == 384
    assert s.graph.env_prefix == "local" and s.graph.augmentation_enabled


@pytest.mark.parametrize(
    "env",
    [
        {"GRAPH_ENV_PREFIX": "Prod-1"},
        {"EMBEDDING_DIM": "abc"},
        {"GRAPH_AUGMENTATION_ENABLED": "maybe"},
        {"EMBEDDING_PROVIDER": "magic"},
    ],
)
def test_bad_settings_fail_with_a_clear_error(env):
    with pytest.raises(SettingsError):
        settings_from_env(env)


def test_feature_flag_off():
    assert not settings_from_env({"GRAPH_AUGMENTATION_ENABLED": "false"}).graph.augmentation_enabled


def test_each_setting_reads_its_variable_and_the_docs_list_every_variable():
    from pathlib import Path

    from heirloom.settings import env_names

    names = env_names()
    assert {"DATABASE_URL", "GRAPH_ENV_PREFIX", "EMBEDDING_DIM", "TRAVERSAL_BUDGET_MS"} <= names
    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    assert sorted(n for n in names if f"`{n}`" not in doc) == []
    # the first variable set and not empty wins; an empty one is unset
    s = settings_from_env({"NEPTUNE_REGION": "", "AWS_REGION": "eu-west-1", "TRAVERSAL_BUDGET_MS": "250"})
    assert s.graph.neptune_region == "eu-west-1" and s.resilience.traversal_budget_ms == 250
    assert settings_from_env({"EMBEDDING_PROVIDER": "bedrock"}).embedding.dimension == 1024
    assert settings_from_env({}).embedding.dimension == 384


def test_the_docs_state_each_setting_s_default_as_the_code_declares_it():
    """docs/configuration.md's default column (its first `value`) is the field's default, for
    every setting whose default is a value (an empty or computed default is described there)."""
    import re
    from pathlib import Path

    from heirloom.settings import _sections, _variables

    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    cells: dict[str, str] = {}  # a row may list several variables and their values: `A` / `B`
    for names, values in re.findall(r"^\| (`[A-Z0-9_]+`(?: / `[A-Z0-9_]+`)*) \| ([^|]*) \|", doc, flags=re.M):
        said = re.findall(r"`([^`]*)`", values)
        for i, name in enumerate(re.findall(r"`([^`]*)`", names)):
            cells[name] = said[i] if len(said) > i else ""
    wrong = []
    for section in _sections().values():
        for field in section.model_fields.values():
            default = field.default
            if default is None or default == "" or isinstance(default, (tuple, frozenset)):
                continue
            for name in _variables(field):
                said = cells.get(name)
                if isinstance(default, bool):
                    same = said == str(default).lower()
                elif isinstance(default, (int, float)):
                    same = (
                        said is not None
                        and re.fullmatch(r"-?[\d.]+", said) is not None
                        and float(said) == default
                    )
                else:
                    same = said == str(default)
                if not same:
                    wrong.append((name, said, default))
    assert wrong == []
