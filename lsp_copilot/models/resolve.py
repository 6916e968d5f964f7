"""The `model` setting turned into what vLLM loads: a preset's folder (prepared on first
use), the user's own folder (verified), or a hub id."""

from __future__ import annotations

import os
import re
from pathlib import Path

from lsp_copilot.models.folders import PREPARE_COMMAND, ModelError, verify_model
from lsp_copilot.models.prepare import ensure_model
from lsp_copilot.models.presets import PRESETS, default_preset, is_preset
from lsp_copilot.models.presets import preset as preset_named
from lsp_copilot.models.source import Log

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _looks_like_path(setting: str) -> bool:
    return (
        os.path.isabs(setting)
        or setting.startswith(("~", "./", "../", ".\\", "..\\"))
        or setting in (".", "..")
        or "\\" in setting
    )


def resolve_model(
    setting: str | None, device: str = "cpu", log: Log | None = None, weights: str = "bf16"
) -> tuple[str, str | None]:
    """Turn the `model` setting into what vLLM loads: (path or hub id, preset name or None).

    Empty/"default" -> the device's default preset; a preset name -> its folder with
    ``weights`` (the `weights` setting), prepared on first use; an existing folder ->
    itself after verify_model; a path that does not exist -> ModelError (a typo must not
    be sent to a hub); anything shaped like ``org/name`` -> returned as a hub id for vLLM.
    """
    value = (setting or "").strip()
    if value.lower() in ("", "default"):
        chosen = default_preset(device)
        return str(ensure_model(chosen, log, weights)), chosen.name
    if is_preset(value):
        chosen = preset_named(value)
        return str(ensure_model(chosen, log, weights)), chosen.name
    path = Path(value).expanduser()
    if path.exists():
        verify_model(path, deep=True)
        return str(path.resolve()), None
    if _looks_like_path(value) or not _HUB_ID.match(value):
        raise ModelError(
            f"the `model` setting {value!r} is neither a preset "
            f"({', '.join(p.name for p in PRESETS)}), an existing folder nor a hub id "
            f"(org/name); fix the setting, or leave it empty for the default "
            f"(`{PREPARE_COMMAND}` builds it)"
        )
    return value, None
