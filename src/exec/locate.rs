//! Turning a traceback into a location: file, line, column, exception, expected vs actual.
