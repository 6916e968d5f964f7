"""The one token a grammar lets follow a keyword, where it lets only one.

After ``if``, ``while`` or ``switch`` in C, Java, JavaScript or TypeScript only ``(`` may
come. A small model asked to complete ``if `` sometimes starts a new statement instead
(`` try {``, `` const argsJson = ...``), and no check can mend that. The grammar knows:
tree-sitter's parse table says, for each state the parser reaches by shifting the
keyword, which tokens may come next (a lookahead iterator); where, over all those states,
that is one literal token, every answer there begins with it. It is read from the
keyword's symbol, not from the parse state at the cursor: code being typed is mid-error,
and error recovery leaves no state there to trust (``if`` inside an ERROR node has the
error state, where nothing is listed).
"""

from __future__ import annotations

import tree_sitter


def keyword_before(tree: tree_sitter.Tree, data: bytes, offset: int) -> tree_sitter.Node | None:
    """The literal token (``if``, not a name) that ends the cursor line's code right before
    ``offset``, with at most spaces or tabs between; None elsewhere (mid-word too)."""
    start = data.rfind(b"\n", 0, offset) + 1
    code = data[start:offset].rstrip(b" \t")
    if not code.strip():
        return None
    end = start + len(code)
    node = tree.root_node.descendant_for_byte_range(end - 1, end)
    if (node is None or node.child_count or node.is_named or node.is_missing
            or node.start_byte < start or node.end_byte != end
            or data[node.start_byte:end].decode("utf-8", "replace") != node.type):
        return None
    return node


def only_follower(language: tree_sitter.Language, symbol: int) -> str:
    """The one literal token ``language`` lets follow ``symbol`` wherever it can be
    shifted, or "". Extras (comments) are left aside: they may come anywhere."""
    first_rule = tree_sitter.Parser(language).parse(b"").root_node.kind_id
    followers: set[int] = set()
    for state in range(language.parse_state_count):
        after = language.next_state(state, symbol)
        listed = language.lookahead_iterator(after) if after and after != state else None
        if listed is None:  # not shifted here, or shifted as an extra
            continue
        # Terminals are numbered before the grammar's first rule (the root of any tree);
        # an extra is shifted without a change of state.
        followers.update(s for s in listed.symbols()
                         if s < first_rule and language.next_state(after, s) != after)
        if len(followers) > 1:
            return ""
    if len(followers) != 1:
        return ""
    (only,) = followers
    if language.node_kind_is_named(only) or not language.node_kind_is_visible(only):
        return ""  # a name or a hidden token: no one text to write
    return language.node_kind_for_id(only) or ""


def forced_after(tree: tree_sitter.Tree | None, data: bytes, offset: int) -> str:
    """The token every answer at ``offset`` begins with, as the grammar says (``(`` after
    ``if `` in TypeScript), or ""."""
    if tree is None:
        return ""
    node = keyword_before(tree, data, offset)
    if node is None:
        return ""
    return only_follower(tree.language, node.grammar_id)
