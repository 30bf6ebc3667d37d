"""circom/snarkjs file formats (.zkey, .wtns, .r1cs, proof/public/vk JSON): readers, writers."""

# Names load on first use (PEP 562), so that a module that needs only the numpy-free parts
# (atomic writes, errors) does not import numpy: the `cuzk prove --server` client path imports
# cuzk.formats.atomic and must stay free of numpy (tests/test_prove_remote.py checks it).

from cuzk.lazy import lazy_exports

# public name -> the module of this package that defines it
_EXPORTS = {
    "atomic_write_bytes": "atomic",
    "atomic_write_text": "atomic",
    "atomic_writer": "atomic",
    "BadHeader": "errors",
    "BadJson": "errors",
    "BadMagic": "errors",
    "BadSectionSize": "errors",
    "BadValue": "errors",
    "BadVersion": "errors",
    "CountMismatch": "errors",
    "DuplicateSection": "errors",
    "FormatError": "errors",
    "MissingSection": "errors",
    "NotInField": "errors",
    "NotInSubgroup": "errors",
    "NotOnCurve": "errors",
    "BadPoint": "errors",
    "Truncated": "errors",
    "Changed": "errors",
    "UnsupportedCurve": "errors",
    "UnsupportedProtocol": "errors",
    "WrongPrime": "errors",
    "Curve": "curve",
    "CURVES": "curve",
    "BN254_Q": "stored",
    "BN254_R": "stored",
    "from_mont_q": "stored",
    "from_mont_r": "stored",
    "g1_array_to_points": "stored",
    "g1_from_limbs": "stored",
    "g1_to_limbs": "stored",
    "g2_array_to_points": "stored",
    "g2_from_limbs": "stored",
    "g2_to_limbs": "stored",
    "int_to_zkey_coef": "stored",
    "to_mont_q": "stored",
    "to_mont_r": "stored",
    "zkey_coef_to_int": "stored",
    "R1CS": "r1cs",
    "SparseMatrix": "r1cs",
    "VerificationKey": "snarkjs_json",
    "fq12_to_json": "snarkjs_json",
    "proof_to_json": "snarkjs_json",
    "read_proof": "snarkjs_json",
    "read_public": "snarkjs_json",
    "read_verification_key": "snarkjs_json",
    "verification_key": "snarkjs_json",
    "write_proof": "snarkjs_json",
    "write_public": "snarkjs_json",
    "write_verification_key": "snarkjs_json",
    "Witness": "wtns",
    "read_wtns": "wtns",
    "write_wtns": "wtns",
    "COEF_DTYPE": "zkey",
    "ZKey": "zkey",
    "ZKeyData": "zkey",
    "write_zkey": "zkey",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
