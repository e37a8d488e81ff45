//! A model that answers from a file of recorded replies.
