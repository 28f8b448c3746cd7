// The version spark reports (`spark --version`, the node facts it answers). Its own module so
// that what reports it need not import the CLI.
export const VERSION = '0.1.0';
