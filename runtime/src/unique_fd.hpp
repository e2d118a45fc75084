#pragma once
#include "sandcell/base/unique_fd.hpp"
