#pragma once
// Internal: the Dockerfile lexer (directives, logical lines, heredoc bodies) shared by the parser.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/rootfs_builder/dockerfile.hpp"

namespace sandcell::rootfs_builder {

struct LogicalLine {
  std::string text{};  // continuations joined, comments inside them dropped
  int line = 0;
  int end_line = 0;
  std::vector<Heredoc> heredocs{};
};

struct LexedDockerfile {
  char escape = '\\';
  std::vector<LogicalLine> lines{};
};

// takes_heredocs tells whether a logical line may carry heredocs (RUN, COPY, ADD in shell form):
// only then are the following source lines read as heredoc bodies.
LexedDockerfile lex_dockerfile(std::string_view text, const std::string& filename,
                               const std::function<bool(std::string_view)>& takes_heredocs);

// Splits on blanks outside quotes, keeping quotes and escapes in the words (BuildKit parseWords).
std::vector<std::string> split_raw_words(std::string_view text, char escape);

// Whitespace-separated words, no quote handling (BuildKit parseStringsWhitespaceDelimited).
std::vector<std::string> split_blanks(std::string_view text);

}  // namespace sandcell::rootfs_builder
