#pragma once
#include "sandcell/runtime/unique_fd.hpp"
