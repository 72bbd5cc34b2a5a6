"""``sampling-harness mutate``: first-order mutants of a kernel's source, run through its
family's checks, every survivor explained by a differential run (docs/how-to/mutate.md)."""
