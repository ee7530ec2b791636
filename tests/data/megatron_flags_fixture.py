# A made-up argparse file in the shapes arguments.py uses, for tools/megatron_flags.py's test.
def _add_example_args(parser):
    group = parser.add_argument_group(title='example')
    group.add_argument('--plain-int', type=int, default=1,
                       help='One option string, single quotes.')
    group.add_argument("--double-quoted", action="store_true")
    group.add_argument('--old_spelling', '--new-spelling', action='store_true',
                       help='Two option strings.')
    group.add_argument(
        '--on-next-line',
        type=str,
        default=None,
    )
    group.add_argument('--toggle', action=argparse.BooleanOptionalAction, default=False)
    group.add_argument('--after-toggle', type=float, help='mentions --not-a-flag in help')
    return parser
