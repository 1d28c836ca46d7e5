"""Reading code as text: languages, tokens, names, credentials and the static embedding.

``languages``  the language of a file from its path
``tokenize``   code-aware tokens: identifiers split by case and underscores, their expansions
``names``      what a query and a path name: the query's shape, stems, path and chunk words
``secrets``    credential names and lines; redaction before indexing, preview and export
``embedding``  static model2vec embeddings (the bundled ranklens-code model in core/models/)
"""
