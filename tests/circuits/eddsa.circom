pragma circom 2.0.0;

// n EdDSA-Poseidon signatures checked by circomlib's EdDSAPoseidonVerifier (compiled with
// `-l .tools/node_modules`; ~8.1k constraints each): signer i's public key (Ax[i], Ay[i]),
// signature (R8x[i], R8y[i], S[i]) over message M[i] (public). Valid signatures come from
// circomlibjs (bench/eddsa_inputs.cjs). Witness values: scalar bits beside dense points.
include "circomlib/circuits/eddsaposeidon.circom";

template EdDSAPoseidonBatch(n) {
    signal input Ax[n];
    signal input Ay[n];
    signal input R8x[n];
    signal input R8y[n];
    signal input S[n];
    signal input M[n];
    component v[n];
    for (var i = 0; i < n; i++) {
        v[i] = EdDSAPoseidonVerifier();
        v[i].enabled <== 1;
        v[i].Ax <== Ax[i];
        v[i].Ay <== Ay[i];
        v[i].R8x <== R8x[i];
        v[i].R8y <== R8y[i];
        v[i].S <== S[i];
        v[i].M <== M[i];
    }
}

component main {public [M]} = EdDSAPoseidonBatch(1);
