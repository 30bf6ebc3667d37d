"""PLONK (snarkjs's, protocol 2): the transcript, the verifier and the one-shot prover."""
