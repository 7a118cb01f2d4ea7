#include "gputwin/common/subcommands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"

#include <algorithm>
#include <exception>
#include <iostream>

namespace gputwin::cli {

namespace {
void print_usage(std::ostream& out, const std::string& program, const std::vector<Subcommand>& subcommands,
                 const std::string& example)
{
  out << "usage: " << program << " <subcommand> [options]   (" << program << " <subcommand> --help for its options)\n\n"
      << "subcommands:\n";
  size_t width = 0;
  for (const Subcommand& s : subcommands)
    width = std::max(width, std::string(s.name).size());
  for (const Subcommand& s : subcommands)
    out << "  " << s.name << std::string(width + 2 - std::string(s.name).size(), ' ') << s.summary << "\n";
  out << "\nexample: " << example << "\n";
}
} // namespace

int run_subcommands(const std::string& program, const std::string& version, const std::vector<Subcommand>& subcommands,
                    const std::string& example, int argc, char** argv)
{
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr, program, subcommands, example);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout, program, subcommands, example);
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << program << " " << version << "\n";
    return 0;
  }
  for (const Subcommand& s : subcommands) {
    if (args[0] != s.name)
      continue;
    try {
      return s.run(std::vector<std::string>(args.begin() + 1, args.end()), std::cout);
    } catch (const InputError& e) {
      std::cerr << program << " " << s.name << ": error: " << e.what() << "\n";
      return 2;
    } catch (const OutputError& e) { // an output file that could not be written (output_file.hpp)
      std::cerr << program << " " << s.name << ": error: " << e.what() << "\n";
      return 2;
    } catch (const std::logic_error& e) { // a broken invariant: a bug of ours
      std::cerr << program << " " << s.name << ": internal error: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) { // the run failed: a device, a peer rank, the file system
      std::cerr << program << " " << s.name << ": failed: " << e.what() << "\n";
      return 1;
    }
  }
  std::string names;
  for (const Subcommand& s : subcommands)
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  std::cerr << program << ": error: unknown subcommand '" << args[0] << "' (expected one of " << names << "; see "
            << program << " --help)\n";
  return 2;
}

} // namespace gputwin::cli
