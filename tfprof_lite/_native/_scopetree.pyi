"""Type stub of the native scope tree builder (``_scopetree.c``)."""

def scope_tree(names: list[str]) -> tuple[list[str], bytes, bytes, bytes] | None:
    """The scope view's tree of ``names``: the names and placeholder prefixes in
    pre-order, then node ids (-1 for a placeholder), parents (-1 at the top
    level) and subtree ends as int64 bytes; None when declined."""
