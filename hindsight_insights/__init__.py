"""Hindsight Insights core: models, store, embeddings, segmentation, ranking and rules. No Dify imports here."""
