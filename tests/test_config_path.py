"""Where the daemon reads roost.json: the home's, else XDG_CONFIG_HOME's, else ~/.config's
(roost.paths.config_file), asked at every row change without copying the environment."""

import os

from roost import paths
from roost.config import Config


def test_the_daemons_config_is_the_homes_else_xdg_config_homes(tmp_path, monkeypatch):
    home = tmp_path / "h"
    home.mkdir()
    config = Config(str(home))

    def as_config_file_says():
        return paths.config_file({**os.environ, "ROOST_HOME": str(home)})

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.path() == str(tmp_path / "xdg" / "roost" / "roost.json") == as_config_file_says()
    (home / "roost.json").write_text("{}")
    assert config.path() == str(home / "roost.json") == as_config_file_says()
    (home / "roost.json").unlink()
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert config.path() == os.path.expanduser("~/.config/roost/roost.json") == as_config_file_says()
