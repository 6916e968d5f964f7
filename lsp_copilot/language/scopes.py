"""Where the cursor is, as the ``scope.scm`` queries see it: the innermost function and
class around it, and whether it is in a comment or a string."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from lsp_copilot.language.grammars import LanguageQueries


@dataclass(frozen=True)
class Scopes:
    function: tree_sitter.Node | None
    klass: tree_sitter.Node | None
    in_comment: bool
    in_string: bool


def _text(node: tree_sitter.Node) -> bytes:
    return node.text or b""


def scopes_at(q: LanguageQueries, tree: tree_sitter.Tree, offset: int) -> Scopes:
    """Innermost function and class around ``offset``, and whether it is in a comment."""
    cursor = tree_sitter.QueryCursor(q.scope)
    cursor.set_byte_range(max(0, offset - 1), offset + 1)
    function = klass = None
    in_comment = in_string = False
    for cap, nodes in cursor.captures(tree.root_node).items():
        for node in nodes:
            if not (node.start_byte < offset <= node.end_byte):
                continue
            if cap == "scope.function":
                if function is None or node.start_byte >= function.start_byte:
                    function = node
            elif cap == "scope.class":
                if klass is None or node.start_byte >= klass.start_byte:
                    klass = node
            elif cap == "comment":
                # At a comment's end the cursor is still in it, unless it is a closed block
                # comment (``*/``, ``]]``) or a line comment that took its newline.
                text = _text(node)
                closed = text.endswith((b"\n", b"*/", b"]]"))
                in_comment = in_comment or offset < node.end_byte or not closed
            elif cap == "string":
                # At its end a string is still open only if it lacks its closing quote.
                closed = node.end_byte == offset and node.end_byte - node.start_byte > 1 and \
                    _text(node)[-1:] in (b'"', b"'", b"`")
                in_string = in_string or not closed
    return Scopes(function, klass, in_comment, in_string)
