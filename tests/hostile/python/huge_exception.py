# One 900 KB exception line on stderr: the error classifier of `sandcell code` runs std::regex over
# the lines the program wrote, and used to overflow its stack on this (SIGSEGV, no record).
raise ValueError("a" * 900_000)
