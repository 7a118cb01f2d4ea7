// The Python module `_gputwin`: the `gputwin` subcommands, each call run in a forked child process
// (subcommand_runner.hpp). python/gputwin/__init__.py turns keyword arguments into flags and the answer into
// Python objects and exceptions; this file only crosses the language boundary.
#include "commands.hpp"
#include "gputwin/common/input_error.hpp"
#include "subcommand_runner.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace {

const char* outcome_name(gputwin::python::Outcome outcome)
{
  using gputwin::python::Outcome;
  switch (outcome) {
  case Outcome::Report: return "report";
  case Outcome::InputError: return "input_error";
  case Outcome::InternalError: return "internal_error";
  case Outcome::Failed: return "failed";
  }
  return "failed";
}

// Runs one subcommand in a child with the GIL released; Ctrl-C (a pending Python signal) stops the child within
// about a second and raises KeyboardInterrupt here.
py::tuple run_subcommand(const std::string& name, const std::vector<std::string>& args)
{
  gputwin::python::SubcommandResult result;
  {
    py::gil_scoped_release release;
    result = gputwin::python::run_subcommand(name, args, [] {
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0)
        throw py::error_already_set();
    });
  }
  return py::make_tuple(outcome_name(result.outcome), result.exit_status, py::bytes(result.text),
                        py::bytes(result.notes));
}

py::list subcommands()
{
  py::list names;
  for (const gputwin::cli::Subcommand& s : gputwin::cli::gputwin_subcommands())
    names.append(py::make_tuple(s.name, s.summary));
  return names;
}

} // namespace

PYBIND11_MODULE(_gputwin, m)
{
  m.doc() = "gputwin's subcommands, each call run in a forked child process (use the package `gputwin`)";
  m.attr("__version__") = GPUTWIN_VERSION;
  m.def("run_subcommand", &run_subcommand, py::arg("name"), py::arg("args"),
        "Runs `gputwin NAME ARGS...` in a forked child; returns (outcome, exit_status, text, notes), outcome one "
        "of 'report', 'input_error', 'internal_error', 'failed', text and notes as bytes.");
  m.def("subcommands", &subcommands, "The subcommands of `gputwin` as (name, summary) pairs, in help order.");
  // gputwin::InputError (an unknown subcommand name) as ValueError; the package re-raises it as its InputError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const gputwin::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}
