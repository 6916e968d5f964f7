"""The typing model by what the CPU can do: its class, the route, the weights, the compile."""

from __future__ import annotations

import pytest

from lsp_copilot.engine import defaults
from lsp_copilot.engine.device import cpu_class
from lsp_copilot.engine.routes import MAIN, chains
from lsp_copilot.settings.engine import EngineSettings

AVX2 = {"fpu", "avx", "avx2", "fma"}
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl"}
VNNI = AVX512 | {"avx512_vnni", "avx512_bf16"}
AMX = VNNI | {"amx_bf16", "amx_tile", "amx_int8"}


@pytest.mark.parametrize(("flags", "env", "expected"), [
    (AMX, {}, "amx"), (VNNI, {}, "avx512-vnni"), (AVX512, {}, "avx512"),
    (AVX2, {}, "avx2"), (set(), {}, "other"), ({"fpu", "sse4_2"}, {}, "other"),
    (VNNI, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "avx2"),  # oneDNN told to stay within AVX2
    (AMX, {"ONEDNN_MAX_CPU_ISA": "avx512_core_vnni"}, "avx512-vnni"),
    (AVX2, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, "avx2"),  # a cap never raises
    (VNNI, {"ONEDNN_MAX_CPU_ISA": "ALL"}, "avx512-vnni"),
])
def test_cpu_class(flags: set[str], env: dict[str, str], expected: str) -> None:
    assert cpu_class(flags, env) == expected


@pytest.mark.parametrize(("flags", "code_model_types"), [
    (AMX, True), (VNNI, True), (AVX512, False), (AVX2, False), (set(), False)])
def test_the_code_model_types_where_the_cpu_carries_it(
        monkeypatch: pytest.MonkeyPatch, flags: set[str], code_model_types: bool) -> None:
    monkeypatch.setattr("lsp_copilot.engine.defaults.cpu_flags", lambda: flags)
    typing = defaults.typing_model("cpu")
    assert (typing.value is None) == code_model_types, typing.why
    assert cpu_class(flags) in typing.why
    plan = {kind: names[0] for kind, names in chains(EngineSettings(), "cpu").items()}
    assert plan["explicit"] == MAIN
    assert plan["singleLine"] == (MAIN if code_model_types else "smollm2-135m")
    # The code model typing is int8 and gets its compiled copy; bf16 otherwise.
    main = EngineSettings()
    assert defaults.weights(main, "cpu").value == ("int8" if code_model_types else "bf16")
    assert defaults.compile_later(main, "cpu").value is code_model_types
    small = EngineSettings(model="smollm2-135m")
    assert defaults.weights(small, "cpu").value == "bf16"
    assert defaults.compile_later(small, "cpu").value is True  # the small model, named


def test_what_the_user_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lsp_copilot.engine.defaults.cpu_flags", lambda: VNNI)
    assert defaults.weights(EngineSettings(weights="bf16"), "cpu").value == "bf16"
    assert defaults.compile_later(EngineSettings(enforce_eager=True), "cpu").value is False
    named = EngineSettings(model="qwen2.5-coder-0.5b")  # a model named: as it is, bf16
    assert defaults.weights(named, "cpu").value == "bf16"
    routes = {"singleLine": "smollm2-135m"}
    plan = chains(EngineSettings(routes=routes), "cpu")  # routes set: no CPU choice
    assert plan["singleLine"][0] == "smollm2-135m"
    assert defaults.weights(EngineSettings(), "cuda").value == "bf16"
    assert defaults.typing_model("cuda").value is None
