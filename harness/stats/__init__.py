"""Statistical tests with stated error rates: small pure functions over counts."""
