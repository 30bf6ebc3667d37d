pragma circom 2.0.0;

// circomlib's SHA-256 (npm package circomlib, compiled with `-l .tools/node_modules`) of an
// nBits-bit message, given as bits; output out[256], the digest's bits (public outputs).
// nBits = 512·blocks − 65 pads to exactly `blocks` compressions (~29.8k constraints each).
// Almost every witness value is 0 or 1.
include "circomlib/circuits/sha256/sha256.circom";

component main = Sha256(447);
