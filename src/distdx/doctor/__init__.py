"""(being built: see the open issues)"""
