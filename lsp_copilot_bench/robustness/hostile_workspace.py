"""The adversarial trial's workspace: what a user's folder may hold, on disk.

- Broken files named after standard-library modules at its root (a project's own
  ``calendar.py``): whatever process starts from this folder must not import them.
- Pathological lines (a keyword and thousands of spaces, a megabyte of minified JSON).
- Secrets of every format the product promises to redact, each with a value found
  nowhere else, so that a search of prompts, caches and logs for the value is exact.
- Files withheld by name, and, beside the folder, a link to it and an ignored folder,
  to reach ignored files through symlinks.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

STDLIB_NAMES = ("calendar", "textwrap", "random", "types", "queue", "token", "socket",
                "threading", "pickle", "json", "typing", "logging", "signal", "selectors",
                "subprocess", "tempfile", "uuid", "string", "struct", "inspect", "enum",
                "dataclasses", "functools", "weakref", "copy", "abc", "ast", "platform")
BROKEN = 'raise SystemExit("imported {name} from the workspace")\nthis is not python (\n'

_PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAs9Lq3vXkQ8ZpWc7Jt2Rb5Yf1Nh4Mg6Kd0Vx"
        "\n-----END RSA PRIVATE KEY-----\n")
KUBE_KEY = base64.b64encode(_PEM.encode()).decode()

SECRETS: dict[str, tuple[str, str, str]] = {
    # format: (file, the line that holds it, the value that must never leave)
    "azure-storage-account-key": (
        "settings.py", 'AZURE = "DefaultEndpointsProtocol=https;AccountName=acmeshop;'
        'AccountKey={v};EndpointSuffix=core.windows.net"',
        "q8Vd2LxR7nTb4KpZ1mWc9HsJ3fYg6Ue0Ao5Xi8Nr2Tk7Lb4Pv1Qz6Mw3Jh9Dc5Sf0Gy8Ra2Un7Ek4Bt1"
        "Cx6Vm3Ol9Iw5Hq=="),
    "url-query-password": (
        "settings.py", 'LOGIN_URL = "https://api.example.com/v1/login?user=bob&password={v}'
        '&lang=en"', "Zx9vLq2RtK7mWp4s"),
    "jdbc-password": (
        "Db.java", '    static final String URL = "jdbc:sqlserver://db:1433;databaseName=shop;'
        'user=sa;password={v};encrypt=true";', "Hx7pQ2vLm9RtZk3w"),
    "ado-net-password": (
        "settings.py", 'MSSQL = "Server=db.internal;Database=shop;User Id=sa;Password={v};"',
        "Wq4nT8rYc2VbLp6e"),
    "redis-empty-user": (
        "settings.py", 'CACHE_URL = "redis://:{v}@cache.internal:6379/0"', "Rk5vN9xQ2mPzL7ad"),
    "go-mysql-dsn": (
        "db.go", '\tdsn := "shop:{v}@tcp(db.internal:3306)/shop?parseTime=true"',
        "Mv3kX8pL2qRnT6bf"),
    "authorization-bearer": (
        "settings.py", 'HEADERS = {{"Authorization": "Bearer {v}"}}',
        "tk_Lq8Zr3Vx9Nw2Pm7Kc4Yb6Hd1Fs5Jg0"),
    "curl-header-bearer": (
        "deploy.sh", 'curl -H "Authorization: Bearer {v}" https://api.example.com/deploy',
        "Pz6Wq1Xr8Tn3Mk5Lv2Jc9Hb4Ga7"),
    "curl-user-password": (
        "deploy.sh", "curl -u deploy:{v} https://ci.example.com/api/build", "Jn5Rb8Vx2Kq7Tm3W"),
    "aws-secret-unquoted": (
        "Dockerfile", "ENV AWS_SECRET_ACCESS_KEY={v}", "Tq3Zb8Xn1Vr6Lp9Km2Wc5Hj7Fd4Gs0Ya8Ue3Rt1"),
    "kubeconfig-client-key-data": (
        "kubeconfig.yaml", "    client-key-data: {v}", KUBE_KEY),
}

ENDINGS = {
    # The code each file ends with: the cursor goes at its end (an explicit request).
    "settings.py": "\n\ndef circle_area(radius):\n    return ",
    "Db.java": "\n    static int twice(int x) {\n        return ",
    "db.go": "\n\treturn dsn\n}\n\nfunc twice(x int) int {\n\treturn ",
    "deploy.sh": "\necho ",
}
HEADS = {
    "Db.java": "class Db {\n",
    "db.go": "package db\n\nfunc Open() string {\n",
    "kubeconfig.yaml": "apiVersion: v1\nusers:\n- name: admin\n  user:\n",
    "Dockerfile": "FROM python:3.12-slim\n",
}
CLOSERS = {"Db.java": "\n    }\n}\n", "db.go": "\n}\n"}
LANGUAGES = {".py": "python", ".java": "java", ".go": "go", ".sh": "shellscript",
             ".yaml": "yaml", "": "dockerfile"}

WITHHELD = {
    ".envrc": "export DATABASE_PASSWORD=Yb3nQ8xLk2Vr\n",
    "infra/prod.tfstate": '{"version": 4, "resources": [{"password": "Tf5sT8aTe2Pw"}]}\n',
    "infra/prod.tfvars": 'db_password = "Tf7vArS3Pw9x"\n',
    ".kube/config": f"users:\n- user:\n    client-key-data: {KUBE_KEY}\n",
    ".docker/config.json": '{"auths": {"ghcr.io": {"auth": "ZG9jazpEbzNrM3JQdzg="}}}\n',
    ".vault-token": "hvs.Vt6kN2pQ8xLr5mZc\n",
    ".my.cnf": "[client]\nuser=root\npassword=My5qLcNf8Pw2\n",
}
"""Files made of credentials: withheld whole by their name, whatever they hold."""

PATHOLOGICAL = {
    "keyword, 1,000 spaces": "password" + " " * 1000 + "x",
    "keyword, 10,000 spaces, =": "password" + " " * 10_000 + "= hunter2hunter2",
    "keyword, 5,000 spaces, :": "api_key:" + " " * 5000 + ": Qx8Lm2Vr7Nt4",
    "keyword, 5,000 tabs, =>": "secret" + "\t" * 5000 + "=> Qx8Lm2Vr7Nt4",
    "keyword, 3,000 spaces, ::": "token" + " " * 3000 + ":: Qx8Lm2Vr7Nt4",
    "keyword, spaces and :=": "passwd :=" + " " * 4000 + "x",
    "a=a=a=... (100 KB)": "a=" * 50_000,
    "quotes (100 KB)": "'\"" * 50_000,
    "backslashes (100 KB)": "\\" * 100_000,
    "minified JSON (1 MB)": "{" + ",".join(f'"key{i}": "value{i}"' for i in range(60_000)) + "}",
    "one character (1 MB)": "x" * 1_000_000,
}
"""Lines that cost some regexes super-linear time; each must be redacted in under 50 ms."""

BIG_LINE = 500_000
"""Lines this long go in files of their own, opened beside the cursor's (a document over
maxDocumentBytes, 2 MB, is not completed at all, which would test nothing)."""

MARKERS = {"ignored": "IGNORED_MARKER_7f3b9c", "outside": "OUTSIDE_MARKER_4e8a2d",
           "excluded": "EXCLUDED_MARKER_2c6d1f"}
"""Text that lives only in ignored or excluded files or outside the workspace: no prompt
may hold it."""


def secret_file(name: str) -> str:
    lines = [line.format(v=value) for file, line, value in SECRETS.values() if file == name]
    return HEADS.get(name, "") + "\n".join(lines) + ENDINGS.get(name, "\n") + CLOSERS.get(
        name, "")


def cursor(name: str) -> tuple[int, int]:
    """(line, UTF-16 column) at the end of the file's ENDINGS text."""
    text = secret_file(name)
    head = text[:len(text) - len(CLOSERS.get(name, ""))]
    lines = head.split("\n")
    return len(lines) - 1, len(lines[-1])


def language(name: str) -> str:
    return LANGUAGES.get(os.path.splitext(name)[1], "plaintext")


def build(base: Path) -> dict[str, Path]:
    """The workspace and its neighbours under ``base``; their paths by role."""
    work, outside, link = base / "workspace", base / "outside", base / "workspace-link"
    for folder in (work / "private", work / "excluded", work / "infra", work / ".kube",
                   work / ".docker", outside):
        folder.mkdir(parents=True, exist_ok=True)
    for name in STDLIB_NAMES:
        (work / f"{name}.py").write_text(BROKEN.format(name=name))
    for name in {file for file, _, _ in SECRETS.values()}:
        (work / name).write_text(secret_file(name))
    for name, text in WITHHELD.items():
        (work / name).write_text(text)
    small = {k: v for k, v in PATHOLOGICAL.items() if len(v) < BIG_LINE}
    (work / "long_lines.py").write_text(
        "".join(f"# {line}\n" for line in small.values())
        + "\n\ndef circle_area(radius):\n    return ")
    for i, line in enumerate(v for v in PATHOLOGICAL.values() if len(v) >= BIG_LINE):
        (work / f"big_line_{i}.py").write_text(f"DATA = {line!r}\n")  # one per file
    (work / ".lspcopilotignore").write_text("private/\n")
    (work / "private" / "keys.py").write_text(
        f'def sign(x, key="{MARKERS["ignored"]}"):\n    return ')
    (work / "excluded" / "notes.py").write_text(
        f'def note(x, tag="{MARKERS["excluded"]}"):\n    return ')
    (outside / "vendor.py").write_text(
        f'def vendor_secret(key="{MARKERS["outside"]}"):\n    return key\n')
    (work / "vendor_link.py").symlink_to(outside / "vendor.py")
    (work / "main.py").write_text(
        "from vendor_link import vendor_secret\nfrom private.keys import sign\n"
        "from excluded.notes import note\n\n\ndef circle_area(radius):\n    return ")
    link.symlink_to(work, target_is_directory=True)
    return {"work": work, "link": link, "outside": outside}


def end_of(path: Path) -> tuple[int, int]:
    """(line, column) at the end of the file at ``path``."""
    lines = path.read_text().split("\n")
    return len(lines) - 1, len(lines[-1])
