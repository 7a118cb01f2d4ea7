// The target that owns the tests' precompiled header (tests/test_pch.hpp): an executable, so that the header is
// compiled with exactly the flags of the test executables that reuse it (-fPIE, the sanitizers, -O1).
int main() { return 0; }
