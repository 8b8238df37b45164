"""The sections of the hugetext benchmark, one module each, and what they share."""


