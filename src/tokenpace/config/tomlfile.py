"""A config file read as TOML within bounds, each way it can fail one line naming the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tokenpace.errors import ConfigError

MAX_CONFIG_BYTES = 1 << 20  # a config of every provider tokenpace knows is under 20 KB


def _read_capped(path: Path) -> str:
    """The file's text, read no further than MAX_CONFIG_BYTES: /dev/zero or a huge file is refused, not held."""
    with path.open("rb") as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: over the {MAX_CONFIG_BYTES}-byte limit of a config file")
    return data.decode("utf-8")


def read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML document; ConfigError (missing, unreadable, not UTF-8, not TOML, too deep) otherwise."""
    try:
        return tomllib.loads(_read_capped(path))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the config file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses arrays and inline tables by recursion: [[[[... thousands deep
        raise ConfigError(f"{path}: arrays or tables nested too deep; no config needs more than a few levels") from None
