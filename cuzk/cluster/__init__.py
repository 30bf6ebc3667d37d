"""cuzk on a Ray cluster: a farm of prover machines behind one gateway (`cuzk serve --ray`).

Each prover machine joins the cluster with `cuzk cluster join HEAD`, which starts a Ray node
carrying the `cuzk_node` resource and its engine settings as node labels (cuzk.cluster.labels);
the gateway runs one node-engine actor on each such machine. Ray is the optional extra
`cuzk[cluster]`: no module of this package imports it at import time.
"""
