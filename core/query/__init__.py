"""A query's pipeline: the stages that turn the arms' rankings into the list a user sees, and
the settings they run with.

``pipeline``     rank(): the stages in a row; check_query, and rank_single for one arm alone
``consolidate``  stage 1: overlapping spans of a file grouped, each arm's best rank kept
``fusion``       stage 2: each group's weighted RRF score (the arithmetic is base.rrf's)
``ranking``      stage 3: the file step: code-aware signals, priors and diversity (Params, Stage)
``priors``       code-aware path priors: tests, examples, docs, non-code
``chunkstep``    stage 4: which chunks of each top file take its places
``labels``       stage 5: the labelled hits: agreement, confidence and the trace
``settings``     FusionSettings: arms, weights, k, priors and single-arm mode of one query
``config``       a root's saved config.json: weights, k, the deep switch, the store
``calibration``  the measured confidence figures (core/calibration.json)
"""
