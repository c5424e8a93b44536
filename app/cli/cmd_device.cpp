// fusion-cli device: prints a device description as the JSON that `--device FILE` reads, so a user can
// start from a preset and edit the numbers (calibrate writes the same format from measurements).
#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/cost/device_description.h"

namespace fx::cli {
namespace {

const char* kHelp =
    "usage: fusion-cli device NAME|FILE|-\n\n"
    "Prints the device description NAME (a preset: H100 SXM, H200, A100 80GB, RTX 4090, L4, or a short key\n"
    "h100, h200, a100, 4090, l4) or FILE (a device JSON file, or - for stdin; checked and written back\n"
    "canonically) as JSON (format fusion-explorer/device, schemas/device.schema.json). Save it, edit the\n"
    "numbers, and pass the file to --device.\n";

int device(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {}, {});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli device: " << (args.ok() ? "name one preset or device file" : args.error()) << "\n";
    return kBadInput;
  }
  const std::string& source = args.positionals()[0];
  auto d = resolve_device_input(source);
  if (!d) return report_errors(err, display_name(source), format_diagnostics(d.errors(), display_name(source)));
  out << device_to_json(*d);
  return kOk;
}

const Register reg({"device", "print a device description (a preset or a file) as device JSON", kHelp, device});

}  // namespace
}  // namespace fx::cli
