pragma circom 2.0.0;

// Range checks over n values (circomlib's Num2Bits and LessThan, compiled with
// `-l .tools/node_modules`; 133 constraints a value): value[i] fits in 64 bits and
// value[i] < bound (public). Witness values: bits, beside the 64-bit values themselves.
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";

template RangeCheck(n) {
    signal input value[n];
    signal input bound;
    component bits[n];
    component lt[n];
    for (var i = 0; i < n; i++) {
        bits[i] = Num2Bits(64);
        bits[i].in <== value[i];
        lt[i] = LessThan(64);
        lt[i].in[0] <== value[i];
        lt[i].in[1] <== bound;
        lt[i].out === 1;
    }
}

component main {public [bound]} = RangeCheck(4);
