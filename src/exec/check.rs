//! Static checks of Python code before it runs (syntax, imports). Advisory.
