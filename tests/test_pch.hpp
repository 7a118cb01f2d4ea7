// The headers nearly every test includes, precompiled once (tests/CMakeLists.txt, gputwin_test): GoogleTest's
// header alone takes ~2.6 s to parse on the CI machine, and there are ~130 test sources. Only system and
// GoogleTest headers here, never the project's, so that editing a project header rebuilds no more than before.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>
