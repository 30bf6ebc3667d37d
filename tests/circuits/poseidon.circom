pragma circom 2.0.0;

// circomlib's Poseidon hash (npm package circomlib, compiled with `-l .tools/node_modules`):
// a real library template for the witness calculator tests. Inputs in[3] (public), output
// out = Poseidon(in).
include "circomlib/circuits/poseidon.circom";

component main {public [inputs]} = Poseidon(3);
