"""Supervision settings: how long an engine call may take, how its health is checked, and
when its circuit breaker keeps requests away. They apply at once, without a restart."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.settings.checks import IS_BOOL, int_range, one_of, optional, setting


@dataclass(frozen=True)
class SupervisionSettings:
    """Supervision: timeouts, health checks, circuit breakers and restarts."""

    request_timeout_ms: int = setting(
        30_000, "Deadline of one engine call; past it the request is answered empty and the "
        "engine's health is checked.", int_range(50, 3_600_000)
    )
    health_check_interval_ms: int = setting(
        5_000, "How often the engine is asked to prove it is alive.", int_range(50, 3_600_000)
    )
    health_check_timeout_ms: int = setting(
        20_000, "An engine that does not answer a health check within this is restarted.",
        int_range(50, 3_600_000)
    )
    breaker_failures: int = setting(
        3, "Failed or timed-out engine calls within breakerWindowMs that open the engine's "
        "circuit breaker: no requests go to it (they take the next engine of their route) "
        "until, breakerCooldownMs later, one probe answers. 0: never opens.",
        int_range(0, 1000)
    )
    breaker_window_ms: int = setting(
        30_000, "How far back failures count for breakerFailures.", int_range(100, 3_600_000)
    )
    breaker_cooldown_ms: int = setting(
        10_000, "How long an open breaker keeps requests away before one probe; also the "
        "longest wait between tries to reach a remote backend that went down.",
        int_range(100, 3_600_000)
    )
    engine_max_restarts: int = setting(
        3, "Automatic engine restarts within 10 minutes; past that it stays down until the "
        "lspCopilot.restartEngine command (a remote backend is tried again until it is "
        "back).", int_range(0, 1000)
    )
    engine_shared: bool = setting(
        True, "One embedded engine per model and settings for every `lsp-copilot serve` of "
        "this user on this machine: the first server that needs it starts it, later ones "
        "attach over a Unix socket, and it stays warm engineIdleMinutes after the last one "
        "leaves (`lsp-copilot engine status`). false: the engine runs inside this server.",
        IS_BOOL, restarts_engine=True
    )
    engine_idle_minutes: int = setting(
        15, "How long a shared engine stays loaded after its last server left (0: it exits "
        "with the last one; sooner if another engine must start: it makes room); taken "
        "from the server that starts it.", int_range(0, 10_080)
    )
    engine_load_timeout_s: int | None = setting(
        None, "An engine start that makes no progress (no load step, no log line, no CPU) "
        "for this long is killed and tried once more. null: 300 on CPU, 600 on CUDA.",
        optional(int_range(10, 86_400))
    )

    engine_load_order: str = setting(
        "typing-first", "Which engine loads first when routes name more than one: "
        "`typing-first` (the one that answers typing, so a cold start suggests as soon as "
        "the small model is up) or `main-first` (the `model` setting's, for explicit "
        "requests first).", one_of("typing-first", "main-first")
    )

    def load_timeout_s(self, device: str) -> float:
        """engineLoadTimeoutS, else the device's default (a GPU load moves more bytes)."""
        if self.engine_load_timeout_s is not None:
            return float(self.engine_load_timeout_s)
        return 300.0 if device == "cpu" else 600.0
