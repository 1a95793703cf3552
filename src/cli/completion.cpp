// ngxtls completion bash|zsh|fish: a shell completion script made from the command line this
// binary parses (its subcommands, options and their value sets) and the rule catalog it
// holds, so that completion cannot drift from either.

#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "engine/engine.hpp"

namespace ngxtls::cli {

namespace {

/// One option of a subcommand as completion needs it.
struct option_info {
  std::vector<std::string> names;    ///< "--format", "-o"
  std::string description;           ///< its help text
  std::vector<std::string> choices;  ///< the values it accepts, when a set
  bool takes_value = false;          ///< not a flag
  bool rule_ids = false;             ///< --select / --ignore: a comma-separated rule id list
};

/// One subcommand: its options and whether its positional argument is a rule id.
struct command_info {
  std::string name, description;
  std::vector<option_info> options;
  bool positional_rule_id = false;
  std::vector<std::string> positional_choices;  ///< the values a positional argument takes
};

// The values of a CLI11 type name such as "TEXT:{text,json,sarif}" (empty ones dropped).
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> out;
  const auto open = type_name.find('{');
  const auto close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return out;
  std::istringstream in(type_name.substr(open + 1, close - open - 1));
  for (std::string v; std::getline(in, v, ',');)
    if (!v.empty()) out.push_back(v);
  return out;
}

std::vector<command_info> commands_of(const CLI::App& app) {
  std::vector<command_info> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    command_info c{sub->get_name(), sub->get_description(), {}, sub->get_name() == "rules", {}};
    for (const CLI::Option* o : sub->get_options()) {
      if (!o->nonpositional()) {
        const auto choices = choices_of(o->get_type_name());
        c.positional_choices.insert(c.positional_choices.end(), choices.begin(), choices.end());
        continue;
      }
      option_info oi;
      for (const auto& l : o->get_lnames()) oi.names.push_back("--" + l);
      for (const auto& s : o->get_snames()) oi.names.push_back("-" + s);
      if (oi.names.empty() || oi.names.front() == "--help") continue;
      oi.description = o->get_description();
      oi.choices = choices_of(o->get_type_name());
      oi.takes_value = o->get_type_size_max() > 0;
      oi.rule_ids = oi.names.front() == "--select" || oi.names.front() == "--ignore";
      c.options.push_back(std::move(oi));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string rule_ids() {
  std::string out;
  for (const auto& r : engine::all_rules()) (out += out.empty() ? "" : " ") += r.id;
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) (out += out.empty() ? "" : sep) += s;
  return out;
}

// Text inside single quotes in a shell script.
std::string single_quoted(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

std::string bash_script(const std::vector<command_info>& cmds) {
  std::vector<std::string> names;
  for (const auto& c : cmds) names.push_back(c.name);
  std::string s =
      "# bash completion for ngxtls (made by `ngxtls completion bash`)\n"
      "_ngxtls() {\n"
      "  local cur prev sub i\n"
      "  local rules='" +
      rule_ids() +
      "'\n"
      "  cur=${COMP_WORDS[COMP_CWORD]}\n"
      "  prev=${COMP_WORDS[COMP_CWORD-1]}\n"
      "  sub=\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${COMP_WORDS[i]} in -*) ;; *) sub=${COMP_WORDS[i]}; break ;; esac\n"
      "  done\n"
      "  if [[ -z $sub ]]; then\n"
      "    COMPREPLY=($(compgen -W \"" +
      join(names, " ") +
      " --help --version\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  case $sub in\n";
  for (const auto& c : cmds) {
    s += "    " + c.name + ")\n      case \"$prev\" in\n";
    std::vector<std::string> flags, files, ids;
    for (const auto& o : c.options) {
      flags.insert(flags.end(), o.names.begin(), o.names.end());
      if (o.rule_ids) {
        ids.insert(ids.end(), o.names.begin(), o.names.end());
      } else if (!o.choices.empty()) {
        s += "        " + join(o.names, "|") + ") COMPREPLY=($(compgen -W \"" +
             join(o.choices, " ") + "\" -- \"$cur\")); return ;;\n";
      } else if (o.takes_value) {
        files.insert(files.end(), o.names.begin(), o.names.end());
      }
    }
    // A rule id list: complete the id after the last comma, keeping what precedes it.
    if (!ids.empty())
      s += "        " + join(ids, "|") +
           ") local pre=; [[ $cur == *,* ]] && pre=${cur%,*},; "
           "COMPREPLY=($(compgen -P \"$pre\" -W \"$rules\" -- \"${cur##*,}\")); return ;;\n";
    if (!files.empty())
      s += "        " + join(files, "|") + ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
    s += "      esac\n      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"" +
         join(flags, " ") + "\" -- \"$cur\"));";
    if (c.positional_rule_id)
      s += " else COMPREPLY=($(compgen -W \"$rules\" -- \"$cur\")); fi ;;\n";
    else if (!c.positional_choices.empty())
      s += " else COMPREPLY=($(compgen -W \"" + join(c.positional_choices, " ") +
           "\" -- \"$cur\")); fi ;;\n";
    else
      s += " else COMPREPLY=($(compgen -f -- \"$cur\")); fi ;;\n";
  }
  s += "  esac\n}\ncomplete -F _ngxtls ngxtls\n";
  return s;
}

std::string zsh_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      if (c == '\\' || c == '[' || c == ']' || c == ':') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string zsh_script(const std::vector<command_info>& cmds) {
  std::string s =
      "#compdef ngxtls\n# zsh completion for ngxtls (made by `ngxtls completion zsh`)\n\n"
      "_ngxtls() {\n  local -a subcommands\n  subcommands=(\n";
  for (const auto& c : cmds) s += "    '" + c.name + ":" + zsh_escape(c.description) + "'\n";
  s += "  )\n  if (( CURRENT == 2 )); then\n    _describe 'subcommand' subcommands\n    return\n"
       "  fi\n  case $words[2] in\n";
  const std::string ids = rule_ids();
  for (const auto& c : cmds) {
    std::vector<std::string> specs;
    for (const auto& o : c.options) {
      std::string action;
      if (o.rule_ids)
        action = ":rule id:_sequence compadd - " + ids;
      else if (!o.choices.empty())
        action = ":value:(" + join(o.choices, " ") + ")";
      else if (o.takes_value)
        action = ":value:_files";
      for (const auto& n : o.names)
        specs.push_back("'" + n + "[" + zsh_escape(o.description) + "]" + action + "'");
    }
    specs.push_back(c.positional_rule_id ? "'1:rule id:(" + ids + ")'"
                    : !c.positional_choices.empty()
                        ? "'1:value:(" + join(c.positional_choices, " ") + ")'"
                        : "'*:file:_files'");
    s += "    " + c.name + ")\n      _arguments -s " + join(specs, " \\\n        ") + " ;;\n";
  }
  s += "  esac\n}\n\n_ngxtls \"$@\"\n";
  return s;
}

std::string fish_script(const std::vector<command_info>& cmds) {
  std::vector<std::string> names;
  for (const auto& c : cmds) names.push_back(c.name);
  const std::string all = join(names, " ");
  std::string s =
      "# fish completion for ngxtls (made by `ngxtls completion fish`)\n"
      "complete -c ngxtls -f\n";
  for (const auto& c : cmds)
    s += "complete -c ngxtls -n 'not __fish_seen_subcommand_from " + all + "' -a " + c.name +
         " -d '" + single_quoted(c.description) + "'\n";
  const std::string ids = rule_ids();
  for (const auto& c : cmds) {
    const std::string when = "-n '__fish_seen_subcommand_from " + c.name + "'";
    for (const auto& o : c.options) {
      std::string line = "complete -c ngxtls " + when;
      for (const auto& n : o.names)
        line += n.rfind("--", 0) == 0 ? " -l " + n.substr(2) : " -s " + n.substr(1);
      if (o.rule_ids)
        line += " -x -a '" + ids + "'";
      else if (!o.choices.empty())
        line += " -x -a '" + join(o.choices, " ") + "'";
      else if (o.takes_value)
        line += " -r -F";
      s += line + " -d '" + single_quoted(o.description) + "'\n";
    }
    s += "complete -c ngxtls " + when + (c.positional_rule_id ? " -x -a '" + ids + "'\n" : " -F\n");
  }
  return s;
}

}  // namespace

void register_completion(CLI::App& app, std::function<int()>& run) {
  auto shell = std::make_shared<std::string>();
  auto* sub = app.add_subcommand(
      "completion", "Print a shell completion script (bash, zsh or fish) for this binary");
  sub->add_option("shell", *shell, "the shell")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  sub->callback([shell, &app, &run] {
    run = [shell, &app] {
      const auto cmds = commands_of(app);
      std::cout << (*shell == "bash"  ? bash_script(cmds)
                    : *shell == "zsh" ? zsh_script(cmds)
                                      : fish_script(cmds));
      return static_cast<int>(exit_ok);
    };
  });
}

}  // namespace ngxtls::cli
