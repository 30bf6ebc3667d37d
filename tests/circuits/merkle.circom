pragma circom 2.0.0;

// n Merkle paths of a Poseidon tree (circomlib's Poseidon(2) and Switcher, compiled with
// `-l .tools/node_modules`): path i hashes leaf[i] up `depth` levels with siblings[i][*],
// index[i]'s bits choosing left or right at each level; output root[i] (public). Witness
// values: dense (Poseidon's states) beside the index bits.
include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/switcher.circom";
include "circomlib/circuits/bitify.circom";

template MerklePath(depth) {
    signal input leaf;
    signal input index;
    signal input siblings[depth];
    signal output root;
    component bits = Num2Bits(depth);
    bits.in <== index;
    component sw[depth];
    component h[depth];
    for (var i = 0; i < depth; i++) {
        sw[i] = Switcher();
        sw[i].sel <== bits.out[i];
        sw[i].L <== i == 0 ? leaf : h[i - 1].out;
        sw[i].R <== siblings[i];
        h[i] = Poseidon(2);
        h[i].inputs[0] <== sw[i].outL;
        h[i].inputs[1] <== sw[i].outR;
    }
    root <== h[depth - 1].out;
}

template MerklePaths(n, depth) {
    signal input leaf[n];
    signal input index[n];
    signal input siblings[n][depth];
    signal output root[n];
    component path[n];
    for (var i = 0; i < n; i++) {
        path[i] = MerklePath(depth);
        path[i].leaf <== leaf[i];
        path[i].index <== index[i];
        path[i].siblings <== siblings[i];
        root[i] <== path[i].root;
    }
}

component main = MerklePaths(1, 20);
