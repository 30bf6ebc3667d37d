pragma circom 2.0.0;

// n Semaphore-shaped membership proofs (circomlib's BabyPbk, Poseidon, Num2Bits, LessThan,
// IsEqual and MultiMux1, compiled with `-l .tools/node_modules`; ~15.9k constraints each),
// as Semaphore's circuit proves one: identity i's secret scalar secret[i] (below the order l
// of BabyJubjub's prime subgroup) gives its public key secret[i]·Base8 and its commitment
// Poseidon(Ax, Ay), a leaf of a binary Poseidon Merkle tree of depth[i] <= maxDepth levels at
// index[i] with siblings[i][*] (levels above depth[i] pass the root through, as zk-kit's
// binary Merkle root does); outputs the root merkleRoot[i] and the nullifier
// nullifier[i] = Poseidon(scope[i], secret[i]) (public), public inputs message[i] (bound to
// the proof by its square) and scope[i]. Witness values: dense (points, Poseidon's states)
// beside the scalar's and the index's bits.
include "circomlib/circuits/babyjub.circom";
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/mux1.circom";
include "circomlib/circuits/poseidon.circom";

template BinaryMerkleRoot(maxDepth) {
    signal input leaf;
    signal input depth;
    signal input index;
    signal input siblings[maxDepth];
    signal output root;
    component bits = Num2Bits(maxDepth);
    bits.in <== index;
    signal node[maxDepth + 1];
    signal rootAt[maxDepth + 1];  // node[i] when the tree's depth is i, else 0
    component atDepth[maxDepth + 1];
    component children[maxDepth];
    component hash[maxDepth];
    var sum = 0;
    node[0] <== leaf;
    for (var i = 0; i <= maxDepth; i++) {
        atDepth[i] = IsEqual();
        atDepth[i].in[0] <== depth;
        atDepth[i].in[1] <== i;
        rootAt[i] <== atDepth[i].out * node[i];
        sum += rootAt[i];
        if (i < maxDepth) {
            children[i] = MultiMux1(2);
            children[i].c[0][0] <== node[i];
            children[i].c[0][1] <== siblings[i];
            children[i].c[1][0] <== siblings[i];
            children[i].c[1][1] <== node[i];
            children[i].s <== bits.out[i];
            hash[i] = Poseidon(2);
            hash[i].inputs[0] <== children[i].out[0];
            hash[i].inputs[1] <== children[i].out[1];
            node[i + 1] <== hash[i].out;
        }
    }
    root <== sum;
}

template SemaphoreProof(maxDepth) {
    signal input secret;
    signal input depth;
    signal input index;
    signal input siblings[maxDepth];
    signal input message;
    signal input scope;
    signal output merkleRoot;
    signal output nullifier;
    var l = 2736030358979909402780800718157159386076813972158567259200215660948447373041;
    component inSubgroup = LessThan(251);
    inSubgroup.in[0] <== secret;
    inSubgroup.in[1] <== l;
    inSubgroup.out === 1;
    component publicKey = BabyPbk();
    publicKey.in <== secret;
    component commitment = Poseidon(2);
    commitment.inputs[0] <== publicKey.Ax;
    commitment.inputs[1] <== publicKey.Ay;
    component tree = BinaryMerkleRoot(maxDepth);
    tree.leaf <== commitment.out;
    tree.depth <== depth;
    tree.index <== index;
    tree.siblings <== siblings;
    merkleRoot <== tree.root;
    component nullifierHash = Poseidon(2);
    nullifierHash.inputs[0] <== scope;
    nullifierHash.inputs[1] <== secret;
    nullifier <== nullifierHash.out;
    signal messageSquare;
    messageSquare <== message * message;
}

template SemaphoreBatch(n, maxDepth) {
    signal input secret[n];
    signal input depth[n];
    signal input index[n];
    signal input siblings[n][maxDepth];
    signal input message[n];
    signal input scope[n];
    signal output merkleRoot[n];
    signal output nullifier[n];
    component proof[n];
    for (var i = 0; i < n; i++) {
        proof[i] = SemaphoreProof(maxDepth);
        proof[i].secret <== secret[i];
        proof[i].depth <== depth[i];
        proof[i].index <== index[i];
        proof[i].siblings <== siblings[i];
        proof[i].message <== message[i];
        proof[i].scope <== scope[i];
        merkleRoot[i] <== proof[i].merkleRoot;
        nullifier[i] <== proof[i].nullifier;
    }
}

component main {public [message, scope]} = SemaphoreBatch(1, 20);
