/* Rewrites a .cu file for g++ and the host emulator: every
 * kernel<<<grid, block[, shared[, stream]]>>>(args) becomes
 * emu_host::launch(stream, "kernel", dim3(grid), dim3(block), kernel, args)
 * (host_launch.h, included first), on one line followed by as many line
 * breaks as the launch spanned, so that later lines keep their numbers.
 * Nothing else changes: the emulated backend runs the very launch code
 * that nvcc compiles.
 *
 * usage: translate_cu IN.cu OUT.cpp */
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &why)
{
    fprintf(stderr, "translate_cu: %s\n", why.c_str());
    exit(2);
}

bool opens(char c) { return c == '(' || c == '[' || c == '{'; }
bool closes(char c) { return c == ')' || c == ']' || c == '}'; }

/* text split at commas outside brackets, each part trimmed */
std::vector<std::string> split_top(const std::string &text)
{
    std::vector<std::string> parts;
    std::string cur;
    int depth = 0;
    for (char c : text) {
        depth += opens(c) - closes(c);
        if (c == ',' && depth == 0) {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    parts.push_back(cur);
    for (std::string &p : parts) {
        size_t a = p.find_first_not_of(" \t\n"), b = p.find_last_not_of(" \t\n");
        p = a == std::string::npos ? "" : p.substr(a, b - a + 1);
    }
    return parts;
}

/* runs of white space as one blank */
std::string one_line(const std::string &text)
{
    std::string out;
    for (char c : text) {
        bool blank = isspace((unsigned char)c);
        if (blank && (out.empty() || out.back() == ' '))
            continue;
        out += blank ? ' ' : c;
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

/* where the kernel expression that ends before src[end] starts: a name,
 * maybe qualified, maybe with template arguments */
size_t kernel_start(const std::string &src, size_t end)
{
    size_t i = end;
    while (i > 0 && isspace((unsigned char)src[i - 1]))
        i--;
    if (i > 0 && src[i - 1] == '>') {
        int depth = 0;
        do {
            i--;
            depth += (src[i] == '>') - (src[i] == '<');
        } while (i > 0 && depth > 0);
    }
    while (i > 0 && (isalnum((unsigned char)src[i - 1]) || src[i - 1] == '_' || src[i - 1] == ':'))
        i--;
    return i;
}

/* just past the bracket that closes the one at src[at] */
size_t past_closing(const std::string &src, size_t at)
{
    int depth = 0;
    for (size_t j = at; j < src.size(); j++) {
        depth += opens(src[j]) - closes(src[j]);
        if (depth == 0)
            return j + 1;
    }
    die("unbalanced brackets after a launch");
}

std::string translate(const std::string &src)
{
    std::string out;
    size_t pos = 0;
    for (;;) {
        size_t at = src.find("<<<", pos);
        if (at == std::string::npos)
            return out + src.substr(pos);
        size_t start = kernel_start(src, at);
        std::string kernel = one_line(src.substr(start, at - start));
        size_t config_end = src.find(">>>", at);
        if (config_end == std::string::npos)
            die("a <<< without >>> after " + kernel);
        std::vector<std::string> config = split_top(src.substr(at + 3, config_end - at - 3));
        if (config.size() < 2 || config.size() > 4)
            die("a launch of " + kernel + " with " + std::to_string(config.size()) + " settings");
        size_t args_at = src.find('(', config_end);
        if (args_at == std::string::npos)
            die("no arguments after the launch of " + kernel);
        size_t args_end = past_closing(src, args_at);
        std::string args = one_line(src.substr(args_at + 1, args_end - args_at - 2));
        out += src.substr(pos, start - pos);
        out += "emu_host::launch(" + (config.size() == 4 ? config[3] : std::string("nullptr")) +
               ", \"" + kernel + "\", dim3(" + config[0] + "), dim3(" + config[1] + "), " + kernel +
               (args.empty() ? "" : ", " + args) + ")";
        for (size_t j = start; j < args_end; j++)
            if (src[j] == '\n')
                out += '\n';
        pos = args_end;
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: translate_cu IN.cu OUT.cpp");
    std::ifstream in(argv[1]);
    if (!in)
        die(std::string("cannot read ") + argv[1]);
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream out(argv[2]);
    out << "#include \"host_launch.h\"\n#line 1 \"" << argv[1] << "\"\n" << translate(text.str());
    if (!out.flush())
        die(std::string("cannot write ") + argv[2]);
    return 0;
}
