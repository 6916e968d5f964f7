"""The token that ends what the cursor line just closed, read from the file itself.

A small model at a line the user has just closed (``}`` of an arrow function, ``)`` of a
call) often has nothing usable to say: it closes the block below again, or writes the
next line without its newline. What the user types next there is often one token: the
``;`` that ends a ``return`` or a ``const`` in a file whose every other ``return`` and
``const`` ends with one, or the ``,`` between an object's members when another member
follows. Both are read from the syntax tree, not from a list per language:

- style: a node ending at the cursor (``return_statement``, ``lexical_declaration``)
  whose kind ends, everywhere else in the file (three or more, nine in ten), with the
  same punctuation token, which this one lacks;
- separator: the node ending at the cursor is followed, with no separator between, by a
  sibling in a parent whose items are all separated by one punctuation token.

The caller passes the answer through the same checks as a model's: it is shown only
when the line is whole with it.
"""

from __future__ import annotations

import tree_sitter

STYLE_MIN = 3
"""Other nodes of the kind it takes to call the file's style."""
STYLE_SHARE = 0.9


def _punctuation(node: tree_sitter.Node, closers: str) -> str:
    """The node's text if it is one anonymous punctuation token (not a bracket)."""
    kind = node.type
    if node.is_named or node.is_missing or not kind or kind in set(closers):
        return ""
    if any(c.isalnum() or c in "([{" for c in kind):
        return ""
    return kind


def _styled_end(tree: tree_sitter.Tree, node: tree_sitter.Node, closers: str) -> str:
    """The token every other node of ``node``'s kind ends with, when ``node`` lacks it."""
    try:
        query = tree_sitter.Query(tree.language, f"({node.type}) @n")
    except (tree_sitter.QueryError, ValueError):  # (an alias the query language refuses)
        return ""
    others = [n for n in tree_sitter.QueryCursor(query).captures(tree.root_node).get("n", [])
              if n.id != node.id and n.child_count]
    if len(others) < STYLE_MIN:
        return ""
    ends: dict[str, int] = {}
    for other in others:
        token = _punctuation(other.children[-1], closers)
        ends[token] = ends.get(token, 0) + 1
    token, count = max(ends.items(), key=lambda kv: kv[1])
    if not token or count < STYLE_SHARE * len(others):
        return ""
    last = node.children[-1] if node.child_count else None
    return "" if last is not None and last.type == token and not last.is_missing else token


def _separator(node: tree_sitter.Node, closers: str) -> str:
    """The parent's one separator, when ``node`` is followed by a sibling without it."""
    parent, following = node.parent, node.next_sibling
    if parent is None or following is None or not (following.is_named or following.is_error):
        return ""
    tokens = {_punctuation(child, closers) for child in parent.children[1:-1]
              if not child.is_named}
    tokens.discard("")
    return tokens.pop() if len(tokens) == 1 else ""


def statement_end(tree: tree_sitter.Tree, offset: int, closers: str) -> str:
    """The one token (``;``, ``,``) that ends what closes at ``offset``, or ""."""
    if offset <= 0:
        return ""
    node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(
        offset - 1, offset)
    chain = []
    while node is not None and node.end_byte == offset and node.parent is not None:
        chain.append(node)
        node = node.parent
    if not chain or chain[0].type not in closers:
        return ""  # the line does not end with a closer
    for item in chain[1:]:
        if not item.is_error and (token := _styled_end(tree, item, closers)):
            return token
    return _separator(chain[-1], closers)
