"""The search box's halves on the generator side: the signature index shards, the ranking of
described queries and the full-text index."""
