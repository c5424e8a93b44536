// fusion-cli device: prints a device description as the JSON that `--device FILE` reads, so a user can
// start from a preset and edit the numbers (calibrate writes the same format from measurements).
#include "app/cli/command.h"
#include "core/cost/device_description.h"

namespace fx::cli {
namespace {

const char* kHelp =
    "usage: fusion-cli device NAME|FILE\n\n"
    "Prints the device description NAME (a preset: H100 SXM, H200, A100 80GB, RTX 4090, L4, or a short key\n"
    "h100, h200, a100, 4090, l4) or FILE (a device JSON file, checked and written back canonically) as JSON\n"
    "(format fusion-explorer/device, schemas/device.schema.json). Save it, edit the numbers, and pass the\n"
    "file to --device.\n";

int device(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {}, {});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli device: " << (args.ok() ? "name one preset or device file" : args.error()) << "\n";
    return kBadInput;
  }
  auto d = resolve_device(args.positionals()[0]);
  if (!d) return report_errors(err, args.positionals()[0], format_diagnostics(d.errors(), args.positionals()[0]));
  out << device_to_json(*d);
  return kOk;
}

const Register reg({"device", "print a device description (a preset or a file) as device JSON", kHelp, device});

}  // namespace
}  // namespace fx::cli
