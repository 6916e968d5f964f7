"""Model families: each template against the exact string its authors published, family
detection from model folders, and token ids (control tokens whole, user text never parsed
for them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.prompts.family import detect_family
from lsp_copilot.prompts.templates import TEMPLATES, Special, template_for
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.hub import SettingsHub
from tests.support.fakes import EncodingEngine
from tests.support.models import smollm2_like_folder


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tokenizer built as SmolLM2's is (its control tokens, byte-level BPE,
    no BOS): the tests run without a prepared model or network, wherever the cache is."""
    return smollm2_like_folder(tmp_path_factory.mktemp("smollm2"))


# -- each template against its published string ---------------------------------------

def test_qwen_fim_is_the_published_code_insertion_prompt() -> None:
    # QwenLM/Qwen2.5-Coder examples/Qwen2.5-Coder.md, "Code Insertion (Fill in the middle)".
    published = """<|fim_prefix|>def quicksort(arr):
    if len(arr) <= 1:
        return arr
    pivot = arr[len(arr) // 2]
    <|fim_suffix|>
    middle = [x for x in arr if x == pivot]
    right = [x for x in arr if x > pivot]
    return quicksort(left) + middle + quicksort(right)<|fim_middle|>"""
    prefix = ("def quicksort(arr):\n    if len(arr) <= 1:\n        return arr\n"
              "    pivot = arr[len(arr) // 2]\n    ")
    suffix = ("\n    middle = [x for x in arr if x == pivot]\n"
              "    right = [x for x in arr if x > pivot]\n"
              "    return quicksort(left) + middle + quicksort(right)")
    assert template_for("qwen2.5-coder").render(prefix, suffix) == published


LIBRARY = "class Book:\n    pass\n"
STUDENT = "class Student:\n    pass\n"


def test_qwen_repository_infilling_is_the_published_format() -> None:
    # Same file, "Repository Level Code Infilling" (its example, shortened files).
    published = """<|repo_name|>library-system
<|file_sep|>library.py
class Book:
    pass

<|file_sep|>student.py
class Student:
    pass

<|file_sep|>main.py
<|fim_prefix|>from library import Library
<|fim_suffix|>
    main()<|fim_middle|>"""
    files = [("library.py", LIBRARY), ("student.py", STUDENT)]
    got = template_for("qwen2.5-coder").render(
        "from library import Library\n", "\n    main()", "# ignored header\n", files,
        "main.py", "library-system")
    assert got == published


def test_qwen_without_other_files_is_plain_fim_with_the_header() -> None:
    t = template_for("qwen2.5-coder")
    got = t.render("x = ", "\n", "# a.py\n", [("a.py", "def f():\n")], "a.py", "repo")
    assert got == "<|fim_prefix|># a.py\nx = <|fim_suffix|>\n<|fim_middle|>"


def test_starcoder2_repository_fim_is_the_papers_format() -> None:
    # StarCoder 2 paper (arXiv 2402.19173) section 5: "<repo_name>reponame<file_sep>
    # filepath0\ncode0<file_sep><fim_prefix>filepath1\ncode1_pre<fim_suffix>code1_suf
    # <fim_middle>code1_mid<file_sep> ...<|endoftext|>" (the model writes from code1_mid).
    published = ("<repo_name>reponame<file_sep>filepath0\ncode0<file_sep><fim_prefix>"
                 "filepath1\ncode1_pre<fim_suffix>code1_suf<fim_middle>")
    got = template_for("starcoder2").render("code1_pre", "code1_suf", "", [("filepath0", "code0")],
                                            "filepath1", "reponame")
    assert got == published


def test_starcoder_fim_is_the_published_psm_prompt() -> None:
    # huggingface.co/bigcode/tiny_starcoder_py README (FIM example).
    published = ("<fim_prefix>def print_one_two_three():\n    print('one')\n    <fim_suffix>\n"
                 "    print('three')<fim_middle>")
    prefix, suffix = "def print_one_two_three():\n    print('one')\n    ", "\n    print('three')"
    assert template_for("starcoder-fim").render(prefix, suffix) == published
    assert template_for("starcoder2").render(prefix, suffix) == published


def test_deepseek_coder_is_the_published_insertion_prompt() -> None:
    # huggingface.co/deepseek-ai/deepseek-coder-1.3b-base "Code Insertion"
    # (fullwidth bars U+FF5C and U+2581 in the token names).
    published = ("<\uff5cfim\u2581begin\uff5c>def f(arr):\n    <\uff5cfim\u2581hole\uff5c>\n"
                 "    return arr<\uff5cfim\u2581end\uff5c>")
    assert template_for("deepseek-coder").render("def f(arr):\n    ", "\n    return arr") == (
        published)


def test_codellama_is_metas_infilling_format() -> None:
    # meta-llama/codellama llama/generation.py: '"<PRE> {pre} <SUF>{suf} <MID>"'.
    assert template_for("codellama").render("def f():", "\n    return 1") == (
        "<PRE> def f(): <SUF>\n    return 1 <MID>")


def test_codestral_puts_the_suffix_first() -> None:
    # mistralai cookbook (tokenizer V3): "<s>[SUFFIX]suffix[PREFIX] prefix" -- <s> is the
    # tokenizer's BOS and the space SentencePiece's; Continue: "[SUFFIX]{suffix}[PREFIX]{prefix}".
    assert template_for("codestral").render("def f(", "return a + b") == (
        "[SUFFIX]return a + b[PREFIX]def f(")


def test_mellum_is_the_published_multi_file_prompt() -> None:
    # huggingface.co/JetBrains/Mellum-4b-base, "Fill in the middle with additional files as
    # context generation".
    published = """<filename>utils.py
def multiply(x, y):
    return x * y
<filename>config.py
DEBUG = True
MAX_VALUE = 100
<filename>example.py
<fim_suffix> 

# Test the function
result = calculate_sum(5, 10)
print(result)<fim_prefix>def calculate_sum(a, b):
<fim_middle>"""  # noqa: W291 (the card's suffix starts with a space)
    files = [("utils.py", "def multiply(x, y):\n    return x * y\n"),
             ("config.py", "DEBUG = True\nMAX_VALUE = 100\n")]
    suffix = " \n\n# Test the function\nresult = calculate_sum(5, 10)\nprint(result)"
    got = template_for("mellum").render("def calculate_sum(a, b):\n", suffix, "", files,
                                        "example.py")
    assert got == published


def test_prefix_only_is_header_and_prefix() -> None:
    t = template_for(None)
    assert t.name == "prefix-only" and template_for("auto") is t
    assert t.render("x = 1\n", "ignored suffix", "# a.py\n") == "# a.py\nx = 1\n"


def test_current_file_blocks_stay_in_the_current_file() -> None:
    files = [("a.py", "class A:\n"), ("lib.py", "def g():\n"), ("a.py", "    def f(self):\n")]
    got = template_for("qwen2.5-coder").render("        ", "", "", files, "a.py", "")
    assert got == ("<|file_sep|>lib.py\ndef g():\n\n<|file_sep|>a.py\n<|fim_prefix|>class A:\n"
                   "    def f(self):\n        <|fim_suffix|><|fim_middle|>")


def test_control_tokens_are_special_pieces() -> None:
    for template in TEMPLATES.values():
        pieces = template.pieces("p", "s", "h", [("o.py", "x\n")], "c.py", "r")
        assert "".join(pieces) == template.render("p", "s", "h", [("o.py", "x\n")], "c.py", "r")
        specials = {p for p in pieces if isinstance(p, Special)}
        assert specials <= set(template.specials()), template.name
        assert bool(specials) == template.fim, template.name
        assert all(isinstance(s, str) and s for s in template.stop), template.name


def test_unknown_template_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown template 'gpt'"):
        template_for("gpt")
    settings, problems = parse_settings({"template": "starcoder3"})
    assert settings.template == "auto"
    assert len(problems) == 1 and "'template'" in problems[0] and "qwen2.5-coder" in problems[0]
    for name in ("auto", *TEMPLATES):
        assert parse_settings({"template": name}) == (Settings(template=name), [])


# -- detection ------------------------------------------------------------------------

def _folder(root: Path, name: str, config: dict[str, Any], added: dict[int, tuple[str, bool]],
            vocab: dict[str, int] | None = None, where: str = "tokenizer.json") -> Path:
    """A fake model folder: config.json and the tokenizer's added tokens, nothing else."""
    folder = root / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    if where == "tokenizer.json":
        (folder / "tokenizer.json").write_text(json.dumps({
            "added_tokens": [{"id": i, "content": c, "special": s} for i, (c, s) in added.items()],
            "model": {"type": "BPE", "vocab": vocab or {}},
        }))
    else:
        (folder / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": {
            str(i): {"content": c, "special": s} for i, (c, s) in added.items()}}))
    return folder


QWEN_TOKENS = {151643: ("<|endoftext|>", True), 151659: ("<|fim_prefix|>", False),
               151660: ("<|fim_middle|>", False), 151661: ("<|fim_suffix|>", False),
               151662: ("<|fim_pad|>", False), 151663: ("<|repo_name|>", False),
               151664: ("<|file_sep|>", False)}
BIGCODE = ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"]


def test_detects_each_family_from_fake_model_folders(tmp_path: Path) -> None:
    llama = {"model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    sc2 = {"model_type": "starcoder2", "architectures": ["Starcoder2ForCausalLM"]}
    codestral = {"model_type": "mistral", "_name_or_path": "mistralai/Codestral-22B-v0.1"}
    mistral = {"model_type": "mistral", "_name_or_path": "mistralai/Mistral-7B-v0.3"}
    cases = {
        "qwen2.5-coder": _folder(tmp_path, "qwen", {"model_type": "qwen2"}, QWEN_TOKENS,
                                 where="tokenizer_config.json"),
        "starcoder2": _folder(
            tmp_path, "sc2", sc2,
            dict(enumerate([(t, True) for t in [*BIGCODE, "<repo_name>", "<file_sep>"]]))),
        "starcoder-fim": _folder(tmp_path, "sc1", {"model_type": "gpt_bigcode"},
                                 dict(enumerate([(t, True) for t in [*BIGCODE, "<filename>"]]))),
        "mellum": _folder(tmp_path, "mellum", llama,
                          dict(enumerate([(t, True) for t in [*BIGCODE, "<filename>"]]))),
        "deepseek-coder": _folder(tmp_path, "ds", llama, {
            32013: ("<\uff5cbegin\u2581of\u2581sentence\uff5c>", True),
            32015: ("<\uff5cfim\u2581hole\uff5c>", False),
            32016: ("<\uff5cfim\u2581begin\uff5c>", False),
            32017: ("<\uff5cfim\u2581end\uff5c>", False)}),
        # CodeLlama keeps its infilling tokens in the SentencePiece vocabulary.
        "codellama": _folder(tmp_path, "cl", llama, {0: ("<unk>", True), 1: ("<s>", True)},
                             vocab={"▁<PRE>": 32007, "▁<SUF>": 32008, "▁<MID>": 32009,
                                    "▁<EOT>": 32010}),
        "codestral": _folder(tmp_path, "codestral",
                             codestral,
                             {1: ("<s>", True), 2: ("</s>", True), 18: ("[PREFIX]", True),
                              19: ("[MIDDLE]", True), 20: ("[SUFFIX]", True)},
                             where="tokenizer_config.json"),
        # Every Mistral v3 tokenizer has [PREFIX]/[SUFFIX]; only Codestral uses them.
        "prefix-only": _folder(tmp_path, "mistral",
                               mistral,
                               {18: ("[PREFIX]", True), 20: ("[SUFFIX]", True)}),
    }
    for family, folder in cases.items():
        assert detect_family(str(folder)) == family, folder.name


def test_the_default_model_is_prefix_only(smollm2: Path) -> None:
    # SmolLM2 has <file_sep>, <repo_name>, <filename> but no fill-in-the-middle tokens.
    assert detect_family(str(smollm2)) == "prefix-only"


def test_hub_ids_and_folders_without_a_tokenizer_go_by_name(tmp_path: Path) -> None:
    assert detect_family("bigcode/starcoder2-3b") == "starcoder2"
    assert detect_family("Qwen/Qwen2.5-Coder-1.5B") == "qwen2.5-coder"
    assert detect_family("deepseek-ai/deepseek-coder-1.3b-base") == "deepseek-coder"
    assert detect_family("JetBrains/Mellum-4b-base") == "mellum"
    assert detect_family("meta-llama/CodeLlama-7b-hf") == "codellama"
    assert detect_family("HuggingFaceTB/SmolLM2-135M") == "prefix-only"
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"_name_or_path": "mistralai/Codestral-22B"}))
    assert detect_family(str(folder)) == "codestral"


# -- token ids ------------------------------------------------------------------------

def _byte_tokenizer(bos: bool = False) -> Tokenizer:
    """A real byte-level tokenizer with Qwen's control tokens (the FIM ones non-special,
    as in Qwen's tokenizer_config): one token per byte, so every text round-trips."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True), AddedToken("<s>",
                                                                                  special=True)])
    tok.add_tokens([AddedToken(c, special=False) for c, special in QWEN_TOKENS.values()
                    if not special])
    if bos:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


INJECTION = 'SEP = "<|file_sep|>"  # <|endoftext|> <|fim_middle|>\n'


def test_control_tokens_are_one_id_and_user_text_never_becomes_one() -> None:
    tok = _byte_tokenizer()
    encoder = PromptEncoder(tok)
    sep = tok.token_to_id("<|file_sep|>")
    template = template_for("qwen2.5-coder")
    pieces = template.pieces(INJECTION + "x = ", "\n", "", [("lib.py", INJECTION)], "a.py",
                             "repo")
    encoded = encoder.encode(pieces)
    structural = [p for p in pieces if isinstance(p, Special)]
    ids = list(encoded.ids)
    # Each template token is exactly its id, once per place the template put it...
    for special in structural:
        assert encoder.token_id(special) in ids
    assert ids.count(sep) == sum(1 for p in structural if p == "<|file_sep|>") == 2
    control = encoder.control_ids
    assert sum(1 for i in ids if i in control) == len(structural)
    # ...and the user's text, control-token strings included, decodes back to itself.
    assert encoded.escaped == 2 * 3 and encoded.missing == ()
    text_ids = [i for i in ids if i not in control]
    assert tok.decode(text_ids) == "".join(p for p in pieces if not isinstance(p, Special))
    # Parsing the text prompt (what vLLM does with text) would have made control tokens.
    assert tok.encode("".join(pieces)).ids.count(sep) == 4


def test_plain_text_is_encoded_as_the_tokenizer_itself_would() -> None:
    encoder = PromptEncoder(_byte_tokenizer())
    text = "# lib.py\ndef f(x):\n    return x\n"
    assert list(encoder.encode(("# lib.py\n", "def f(x):\n    return x\n")).ids) == (
        _byte_tokenizer().encode(text).ids)


def test_bos_comes_first_as_vllms_text_path_adds_it() -> None:
    tok = _byte_tokenizer(bos=True)
    encoder = PromptEncoder(tok)
    assert encoder.bos == (tok.token_to_id("<s>"),)
    assert encoder.encode(("ab",)).ids == tuple(tok.encode("ab").ids)


def test_stop_strings_that_are_control_tokens_stop_by_id() -> None:
    tok = _byte_tokenizer()
    encoder = PromptEncoder(tok)
    ids = encoder.stop_ids(template_for("qwen2.5-coder").stop)
    assert tok.token_to_id("<|file_sep|>") in ids and tok.token_to_id("<|endoftext|>") in ids
    assert encoder.stop_ids(["\n", "x"]) == ()  # ordinary text never stops by id


def test_smollm2_tokenizer_keeps_file_sep_in_user_code_as_text(smollm2: Path) -> None:
    encoder = PromptEncoder.for_model(str(smollm2))
    assert encoder is not None and encoder.bos == ()
    tok = Tokenizer.from_file(str(smollm2 / "tokenizer.json"))
    sep = tok.token_to_id("<file_sep>")
    pieces = template_for("starcoder2").pieces("x = '<file_sep>'\n", "", "",
                                               [("b.py", "y = 2\n")], "a.py", "ws")
    encoded = encoder.encode(pieces)
    assert list(encoded.ids).count(sep) == 2  # the two the template placed
    assert encoded.escaped == 1
    # The model has no FIM tokens: they go as text (as `bench prompt` always sent them).
    assert set(encoded.missing) == {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"}
    # Prefix-only: the same ids as the tokenizer's own encoding of code without such strings.
    code = "def f(x):\n    return x  # é 😀\n"
    assert list(encoder.encode(template_for(None).pieces(code, "")).ids) == tok.encode(code).ids


def test_encoder_from_the_transformers_tokenizer_vllm_loads(smollm2: Path) -> None:
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(smollm2))
    encoder = PromptEncoder.for_hf_tokenizer(hf)
    assert encoder is not None
    code = "x = 1  # <file_sep>\n"
    assert encoder.encode((code,)).escaped == 1
    assert PromptEncoder.for_hf_tokenizer(None) is None


# -- wiring (FAKE engine: the template choice and the request, not the model) ---------

async def _complete_fake(engine: EncodingEngine, **settings: Any) -> Any:
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.engine.manager import EngineManager
    from lsp_copilot.pipeline.completer import Completer
    from lsp_copilot.telemetry import Telemetry

    manager = EngineManager(factory=lambda s, report: engine)  # type: ignore[arg-type,return-value]
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(debounce_mode="off", cache=False, **settings)
    completer = Completer(manager, Telemetry(), SettingsHub(s))
    store = DocumentStore()
    text = INJECTION + "def f(a):\n    return a + "
    store.open("file:///w/a.py", "python", 1, text)
    await completer.complete(store.snapshot("file:///w/a.py"), len(text.encode()))
    return completer


async def test_fake_engine_gets_the_detected_familys_token_ids() -> None:
    engine = EncodingEngine("qwen2.5-coder", PromptEncoder(_byte_tokenizer()))
    completer = await _complete_fake(engine)
    request = engine.requests[-1]
    assert request.prompt.startswith("<|fim_prefix|>") and request.prompt.endswith(
        "<|fim_middle|>")
    assert request.prompt_token_ids and request.stop_token_ids
    assert engine.encoder is not None
    assert request.prompt_token_ids == engine.encoder.encode(
        template_for("qwen2.5-coder").pieces(*_prefix_suffix(request.prompt))).ids
    counters = completer.telemetry.counters
    assert counters["token_id_prompts"] == 1
    assert counters["prompt_token_ids"] == len(request.prompt_token_ids)
    assert counters["escaped_special_tokens"] == 3


def _prefix_suffix(prompt: str) -> tuple[str, str]:
    body = prompt.removeprefix("<|fim_prefix|>").removesuffix("<|fim_middle|>")
    prefix, _, suffix = body.partition("<|fim_suffix|>")
    return prefix, suffix


async def test_fake_engine_template_setting_overrides_detection() -> None:
    engine = EncodingEngine("qwen2.5-coder", None)
    await _complete_fake(engine, template="prefix-only")
    request = engine.requests[-1]
    assert "<|fim_prefix|>" not in request.prompt.replace(INJECTION, "")
    assert request.prompt_token_ids is None  # no tokenizer: the text goes


def test_smollm2_prompts_encoded_line_by_line_equal_the_whole_encoding(smollm2: Path) -> None:
    """The encoder cuts long prompts before newlines that follow a visible character and
    caches each line's ids (a prompt that grows by a keystroke re-encodes one line); the
    ids must be exactly the tokenizer's own for the whole text."""
    import random
    import sysconfig

    encoder = PromptEncoder.for_model(str(smollm2))
    assert encoder is not None and encoder._by_line
    tok = Tokenizer.from_file(str(smollm2 / "tokenizer.json"))
    rng = random.Random(7)
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    for path in rng.sample(files, 40):
        text = path.read_text("utf-8", "replace")
        start = rng.randrange(len(text))
        sample = text[start:start + rng.randrange(300, 6000)] + " \t\n\n  é\n"
        assert encoder.encode((sample,)).ids == tuple(tok.encode(sample).ids), path


def test_a_tokenizer_that_merges_across_newlines_is_encoded_whole() -> None:
    """A BPE that merges a character with the newline after it fails the encoder's check
    at start: it then encodes each text whole, and the ids stay the tokenizer's own."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    vocab[")Ċ"] = len(vocab)  # ")\n" as one token, no pre-tokenizer to keep them apart
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[(")", "Ċ")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    encoder = PromptEncoder(tok)
    assert not encoder._by_line
    text = "print(x)\n" * 60
    assert encoder.encode((text,)).ids == tuple(tok.encode(text).ids)
