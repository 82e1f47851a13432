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
