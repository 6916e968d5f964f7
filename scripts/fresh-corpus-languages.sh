#!/bin/sh
# Held-out code in every language lsp-copilot claims besides Python, split as
# scripts/fresh-corpus.sh splits Python's: rules may be tried and tuned on DIR/<lang>/tune,
# figures are reported on DIR/<lang>/report, whose code nobody reads or tunes on.
#   DIR/<lang>/tune/<package>/...   DIR/<lang>/report/<package>/...
# for `lsp-copilot bench quality --split tune|report --language-corpus LANG=DIR/<lang>`.
# Usage: scripts/fresh-corpus-languages.sh DIR
#
# TypeScript and JavaScript: npm packages published in 2026 (the registry's `time` for the
# version; the registry reachable here lists only some versions, so "first" is the earliest
# it lists), fetched with `npm pack` and checked against the sha256 of the .tgz.
# note-api-client (a first pick for tune) ships only stubs compiled from TypeScript (591
# lines in 42 files): no hole could be cut in it; skills-ref and @classytic/realtime-agents
# replaced it.
# Rust: PyPI sdists first uploaded in 2026 and built with maturin (their `src/*.rs`), the
# sdist's URL and sha256 from PyPI's JSON API (`pip download --no-binary` would build the
# metadata, which needs cargo), checked after download.
# Go, Java, C++: Debian's golang-src, openjdk-17-source and libstdc++-12-dev (in every
# model's training data: parse and whole figures only, not exactness), folders copied
# into the splits; the package must be installed (apt-get install ...).
# The table of pins with dates and authors is in docs/benchmarks.md ("Corpora").
set -eu
DIR=${1:?usage: scripts/fresh-corpus-languages.sh DIR}
PY=${PY:-python3}

sha256() {
    "$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

check() {  # file pinned-sha256
    got=$(sha256 "$1")
    if [ "$got" != "$2" ]; then
        echo "error: $1 has sha256 $got, pinned $2: not the pinned file" >&2
        exit 1
    fi
}

# lang split name version tgz sha256
NPM='typescript tune anymap-ts 0.6.2 anymap-ts-0.6.2.tgz 46924c7d4752245cb988c9c40c3d690b5a0450cb88d1afaab824d17db14e7861
typescript tune @atomic-ehr/fhirpath 0.1.4 atomic-ehr-fhirpath-0.1.4.tgz b7d4ef768d4d41e3f258da23b883af159f0a63f528fa37bd1fa917db6d2f15f5
typescript report @inconvoai/node 0.5.0 inconvoai-node-0.5.0.tgz ed17ee34da2af5823201609e092d8f801d5184af15a38bf04c3a86c07b0ef1f6
javascript tune @clawdbot/lobster 2026.5.22 clawdbot-lobster-2026.5.22.tgz 967fa14547c8c1455273c4ed512116b644c0ed1bb2f1620dc88d6bb4b5810e6f
javascript tune skills-ref 0.1.5 skills-ref-0.1.5.tgz 0bc9a70d10987a2517d92b0f608fb885eeabd8efcc40ad4c2e338a1c1e8ddc6f
javascript tune @classytic/realtime-agents 0.2.3 classytic-realtime-agents-0.2.3.tgz cb4522c8adf78b88fad03beed0867c7a29b18ffd945cb72f586e1b4542fb83a3
javascript report @bitwarden/mcp-server 2026.7.0 bitwarden-mcp-server-2026.7.0.tgz 65cbb47fa3623d99bfdd21e769796fc1bc4494d83f0db49b20d335ff3381658e
javascript report yologuard 0.0.4 yologuard-0.0.4.tgz 5227b2a538df58c087862bbdee90b93dd04c81f37298080e78e567059b673642'

# split name version sdist sha256
PYPI='tune aann 0.3.0 aann-0.3.0.tar.gz 494bb2a1d9fff50274fe1617b2c756a3f2dbadd4e46a621db70daf577e6d91f3
tune aci-rssa 0.0.10 aci_rssa-0.0.10.tar.gz d39f65b7517010920e34c3773f417cd8c32f3c4b5c12feb75576b21f2e5f7d22
tune abnf-rust 2.9.1 abnf_rust-2.9.1.tar.gz d794842e156ee924f1fc6a475244385b6a78fe31154908ce0c6323684cabc5b8
report afisp-rs 0.1.1 afisp_rs-0.1.1.tar.gz a08761c9294f86f80b6ccddfbe90a8bda50516ebe9c2492f1ded1b6270164584
report actorplane 0.1.0 actorplane-0.1.0.tar.gz d6c178d06296c0b746cbfc07f0746b600ba2616618e74c653436e605ac2a2342'

# lang split package-name source folder (under the Debian package's root)
GO_SRC=/usr/share/go-1.19/src
JAVA_ZIP=/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip
CPP_SRC=/usr/include/c++/12
DEBIAN="go tune encoding-json $GO_SRC/encoding/json
go tune text-template $GO_SRC/text/template
go tune bufio $GO_SRC/bufio
go report archive-tar $GO_SRC/archive/tar
go report compress-flate $GO_SRC/compress/flate
go report go-parser $GO_SRC/go/parser
java tune java-util-concurrent java.base/java/util/concurrent
java tune java-util-regex java.base/java/util/regex
java report java-text java.base/java/text
java report java-time-format java.base/java/time/format
cpp tune bits $CPP_SRC/bits
cpp report ext $CPP_SRC/ext
cpp report tr1 $CPP_SRC/tr1"

mkdir -p "$DIR/downloads"
for lang in typescript javascript rust go java cpp; do
    rm -rf "${DIR:?}/$lang"
done

echo "$NPM" | while read -r lang split name version tgz sha; do
    (cd "$DIR/downloads" && npm pack -q "$name@$version" >/dev/null)
    check "$DIR/downloads/$tgz" "$sha"
    dest="$DIR/$lang/$split/$(echo "$name" | tr -d @ | tr / -)"
    mkdir -p "$dest"
    tar xzf "$DIR/downloads/$tgz" -C "$dest" --strip-components=1
    # A JavaScript package's code is its dist/ folder, which a workspace index leaves out
    # as build output: the code is moved to code/ (for TypeScript, dist/ is the build).
    if [ "$lang" = javascript ] && [ -d "$dest/dist" ]; then
        mv "$dest/dist" "$dest/code"
    fi
done

echo "$PYPI" | while read -r split name version sdist sha; do
    "$PY" - "$name" "$version" "$sdist" "$DIR/downloads/$sdist" <<'EOF'
import json, sys, urllib.parse, urllib.request
name, version, filename, out = sys.argv[1:]
index = f"https://pypi.org/pypi/{name}/json"
files = json.load(urllib.request.urlopen(index, timeout=60))["releases"][version]
url = next(urllib.parse.urljoin(index, f["url"]) for f in files if f["filename"] == filename)
with open(out, "wb") as f:
    f.write(urllib.request.urlopen(url, timeout=120).read())
EOF
    check "$DIR/downloads/$sdist" "$sha"
    dest="$DIR/rust/$split/$name"
    mkdir -p "$dest"
    tar xzf "$DIR/downloads/$sdist" -C "$dest" --strip-components=1
done

echo "$DEBIAN" | while read -r lang split name source; do
    dest="$DIR/$lang/$split/$name"
    mkdir -p "$dest"
    case $lang in
        java)
            [ -f "$JAVA_ZIP" ] || { echo "error: no $JAVA_ZIP: apt-get install openjdk-17-source" >&2; exit 1; }
            "$PY" - "$JAVA_ZIP" "$source/" "$dest" <<'EOF'
import sys, zipfile
from pathlib import Path
archive, prefix, dest = zipfile.ZipFile(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
for info in archive.infolist():
    rest = info.filename[len(prefix):]
    if info.filename.startswith(prefix) and rest.endswith(".java") and "/" not in rest:
        (dest / rest).write_bytes(archive.read(info))
EOF
            ;;
        go)
            [ -d "$source" ] || { echo "error: no $source: apt-get install golang-src" >&2; exit 1; }
            find "$source" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "$dest" \;
            ;;
        cpp)
            [ -d "$source" ] || { echo "error: no $source: apt-get install libstdc++-12-dev" >&2; exit 1; }
            # The headers are C++ (most have no suffix, the rest `.h`, which reads as C):
            # copied with `.hpp`, so that the C++ grammar reads them; `.tcc` is C++ already.
            for f in "$source"/*; do
                [ -f "$f" ] || continue
                case $f in
                    *.tcc) cp "$f" "$dest/" ;;
                    *) cp "$f" "$dest/$(basename "$f" .h).hpp" ;;
                esac
            done
            ;;
    esac
done

for lang in typescript javascript rust go java cpp; do
    for pkg in "$DIR/$lang"/*/*/; do
        echo "$lang $(basename "$(dirname "$pkg")") $(basename "$pkg"): $(find "$pkg" -type f | wc -l) files"
    done
done
