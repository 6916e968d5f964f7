"""Trial (e): secret files opened and typed in. Files made of credentials get no engine
request at all; ordinary files holding secrets are completed from redacted prompts."""

from __future__ import annotations

from lsp_copilot_bench.robustness.client import RawClient
from lsp_copilot_bench.robustness.trial import Trial, utf16_len

WITHHELD = {
    ".env": "DATABASE_URL=postgres://u:p@db/x\nAPI_KEY=",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
    "server.key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
}
REDACTED = {
    "settings.py": 'AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\nAWS_REGION = "',
    "deploy.py": 'TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n\ndef deploy():\n    ',
}


async def _type(client: RawClient, name: str, text: str, keystrokes: int) -> int:
    """Open ``name``, type ``keystrokes`` characters at its end with a request after each;
    the number of requests."""
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
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return keystrokes


async def trial_secrets(client: RawClient, keystrokes: int = 20) -> Trial:
    before = await client.stats()
    withheld = sum([await _type(client, n, t, keystrokes) for n, t in WITHHELD.items()])
    middle = await client.stats()
    redacted = sum([await _type(client, n, t, keystrokes) for n, t in REDACTED.items()])
    after = await client.stats()
    engine = middle["engine_requests"] - before["engine_requests"]
    skipped = middle["secret_skipped"] - before["secret_skipped"]
    prompts = after.get("secrets_redacted", 0) - middle.get("secrets_redacted", 0)
    return Trial("secrets", engine == 0 and skipped == withheld and prompts > 0, (
        f"{len(WITHHELD)} withheld files, {withheld} keystrokes with a request each: engine "
        f"requests +{engine}, secret_skipped +{skipped}; {len(REDACTED)} files with secrets, "
        f"{redacted} keystrokes: secrets_redacted +{prompts}"),
        {"requests": withheld + redacted, "engine_requests": engine, "secret_skipped": skipped,
         "secrets_redacted": prompts})
