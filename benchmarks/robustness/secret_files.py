"""Trial (e): secret files opened and typed in; none of it may reach the engine."""

from __future__ import annotations

from benchmarks.robustness.client import RawClient
from benchmarks.robustness.trial import Trial, utf16_len

SECRETS = {
    ".env": "DATABASE_URL=postgres://u:p@db/x\nAPI_KEY=",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
    "settings.py": 'AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\nAWS_SECRET = "',
    "deploy.py": 'TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n\ndef deploy():\n    ',
    "server.key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
}


async def trial_secrets(client: RawClient, keystrokes: int = 20) -> Trial:
    before = await client.stats()
    requests = 0
    for name, text in SECRETS.items():
        uri = f"file:///secret/{name}"
        client.open(uri, text, "python" if name.endswith(".py") else "plaintext")
        lines = text.split("\n")
        line, char = len(lines) - 1, utf16_len(lines[-1])
        for k in range(keystrokes):
            ch = "abc(x)"[k % 6]
            pos = {"line": line, "character": char}
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": k + 2},
                "contentChanges": [{"range": {"start": pos, "end": pos}, "text": ch}]})
            char += 1
            await client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": char},
                "context": {"triggerKind": 2}}, timeout=60)
            requests += 1
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    after = await client.stats()
    engine = after["engine_requests"] - before["engine_requests"]
    skipped = after["secret_skipped"] - before["secret_skipped"]
    return Trial("secrets", engine == 0 and skipped == requests, (
        f"{len(SECRETS)} secret files, {requests} keystrokes with a request each: "
        f"engine requests +{engine}, secret_skipped +{skipped}"),
        {"requests": requests, "engine_requests": engine, "secret_skipped": skipped})
