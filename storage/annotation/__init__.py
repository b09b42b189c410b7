"""What an annotated object's words and box mean, for every room above: the word-level forms of
its name and the same-class test (``names``), colour words and the pixels they name (``colours``),
box geometry (``boxes``) and how much of it an edit changed (``coverage``).

A room of its own at the bottom, beside the store rather than part of it: miners, prompts,
editors and tasks all read it, and those may not import one another. It imports nothing else of
``storage``, and nothing else of ``storage`` imports it (both checked by ``lint-imports``).
"""
